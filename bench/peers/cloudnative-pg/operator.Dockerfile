# CloudNativePG's operator image, laid out as its own Dockerfile lays it out: the manager binary
# at /operator/manager_<arch> (the operator lists that directory to know which architectures it
# can hand to instance Pods, and refuses a Cluster without its own), /manager a link to it (the
# Deployment runs `/manager controller`, every instance Pod's `bootstrap-controller` init
# container `/manager bootstrap /controller/manager`), working directory /. The binary is built
# by system.mjs from the Go module and copied into the build context; it is static
# (CGO_ENABLED=0), so the base only has to be the one image testenv can build from.
FROM node:20-bookworm-slim
WORKDIR /
# Readable and executable by any user: instance Pods run the init container as postgres (26).
COPY --chmod=0755 manager /operator/manager_amd64
RUN ln -sf operator/manager_amd64 /manager
# The Deployment runs it as 10001 whatever the image says; by number, so that runAsNonRoot can be verified.
USER 10001:10001
ENTRYPOINT ["/manager"]
