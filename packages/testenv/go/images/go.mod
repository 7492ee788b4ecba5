// The programs of testenv's locally built container images (the Pod sandbox and a test
// workload). Standard library only: no registry or module proxy is needed to build them.
module kanri.dev/testenv/images

go 1.22
