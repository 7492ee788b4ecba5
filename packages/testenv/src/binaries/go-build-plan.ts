/** Pure planning of the `go` invocations that build each component from its pinned wrapper module in `go/`. */
import { fileURLToPath } from 'node:url';
import { type ComponentSpec, KUBE_ROUTER_VERSION, KUBERNETES_VERSION, KWOK_STAGE_FILES } from '../versions.js';

/** One `go` invocation. */
export interface GoCommand {
  readonly cwd: string;
  readonly args: readonly string[];
}

/** How to build one component: `list` counts the packages (for progress), `build` writes the binaries into `outDir`. */
export interface GoBuildPlan {
  readonly component: ComponentSpec;
  /** Where the build writes the component's binaries and files. */
  readonly outDir: string;
  readonly download: GoCommand;
  readonly list: GoCommand;
  readonly build: GoCommand;
  /** Files to concatenate from a dependency's module source into `output` after the build. */
  readonly bundle?: { readonly locate: GoCommand; readonly files: readonly string[]; readonly output: string };
}

/** The wrapper modules ship inside this package, beside `dist/` (this file runs from `dist/src/binaries/`). */
export const goModulesDir = fileURLToPath(new URL('../../../go/', import.meta.url));

const kubernetesPackages = (c: ComponentSpec) => c.binaries.map((b) => `k8s.io/kubernetes/cmd/${b}`);

function ldflags(component: ComponentSpec): string {
  if (component.name === 'helm') {
    // As helm's Makefile does: `helm version` tells the truth, and `helm template`/`lint` assume
    // the Kubernetes version helm was built against (ours) rather than a stale default.
    const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
    return [
      '-s -w',
      `-X helm.sh/helm/v3/internal/version.version=${component.version}`,
      '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
      `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${major}`,
      `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${minor}`,
      `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${major}`,
      `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${minor}`,
    ].join(' ');
  }
  // Without this `versitygw --version` says "git", as a build outside its Makefile does.
  if (component.name === 'versitygw') return `-s -w -X main.Version=${component.version}`;
  if (component.name === 'kube-router')
    return `-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=${KUBE_ROUTER_VERSION}`;
  if (component.name !== 'kubernetes' && component.name !== 'kubernetes-node') return '-s -w';
  // Without these the binaries report v0.0.0-master, and clients that check /version (kubectl's skew
  // warning) complain; a kubelet also reports it as its Node's `status.nodeInfo.kubeletVersion`.
  const [major, minor] = component.version.slice(1).split('.');
  return [
    '-s -w',
    `-X k8s.io/component-base/version.gitVersion=${component.version}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    `-X k8s.io/client-go/pkg/version.gitVersion=${component.version}`,
  ].join(' ');
}

function packagesOf(component: ComponentSpec): string[] {
  switch (component.name) {
    case 'kubernetes':
    case 'kubernetes-node':
      return kubernetesPackages(component);
    case 'etcd':
    case 'kube-router': // its wrapper module's own main package
    case 'coredns':
      return ['.'];
    case 'kwok':
      return ['sigs.k8s.io/kwok/cmd/kwok'];
    case 'helm':
      return ['helm.sh/helm/v3/cmd/helm'];
    case 'versitygw':
      return ['github.com/versity/versitygw/cmd/versitygw'];
  }
}

/** Plans the build of `component` into `outDir` (which must end without a slash). */
export function planGoBuild(component: ComponentSpec, outDir: string, modulesDir = goModulesDir): GoBuildPlan {
  const cwd = `${modulesDir}${component.name}`;
  const packages = packagesOf(component);
  // `-o dir/` writes one binary per main package; for a single package `-o` names the file.
  const output = packages.length > 1 ? `${outDir}/` : `${outDir}/${component.binaries[0]}`;
  return {
    component,
    outDir,
    download: { cwd, args: ['mod', 'download'] },
    // Standard-library packages count too: with a cold Go cache `go build -v` compiles them as well.
    list: { cwd, args: ['list', '-deps', '-f', '{{.ImportPath}}', ...packages] },
    build: { cwd, args: ['build', '-v', '-trimpath', '-ldflags', ldflags(component), '-o', output, ...packages] },
    ...(component.name === 'kwok'
      ? {
          bundle: {
            locate: { cwd, args: ['list', '-m', '-f', '{{.Dir}}', 'sigs.k8s.io/kwok'] },
            files: KWOK_STAGE_FILES,
            output: `${outDir}/kwok-stages.yaml`,
          },
        }
      : {}),
  };
}
