/**
 * The references and version of the images testenv builds for real nodes (`ensureTestImages`).
 * Kept apart from `versions.ts`, which pins downloaded and Go-module components: these images
 * are built from this package's own Go sources (`go/images/`).
 */

/**
 * Bump it with every change to `go/images/` or to the image specs: it names the cache entry and
 * the echo image's tag, so a node that kept an older import never runs a stale image under the
 * new name. `image-specs.test.ts` fails until the sources' digest below is updated with it.
 */
export const TEST_IMAGES_VERSION = 'v2';

/** The SHA-256 of `go/images/` (see `goSourcesDigest`), checked by a unit test. */
export const TEST_IMAGES_SOURCES_SHA256 = 'cba3fe9eb7fc1f21e09c8af96f7550132fc984140ab844787ca2ea9526aff0e8';

/**
 * The sandbox image. containerd's CRI plugin starts every Pod with its `sandbox_image` and pulls
 * it when absent, which fails here (no registry is reachable). Real nodes set `sandbox_image` to
 * this name and import the image under it, so it is found and never pulled.
 */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

/** The test workload image (`go/images/echo-server`); run it with `imagePullPolicy: Never` or `IfNotPresent`. */
export const ECHO_IMAGE = `kanri.dev/testenv/echo:${TEST_IMAGES_VERSION}`;

/** The port the echo server listens on unless its Pod sets `PORT`. */
export const ECHO_PORT = 8080;

/**
 * The echo image's user and group (distroless's `nonroot`). Numeric, because the kubelet can only
 * verify `runAsNonRoot` (required by the `restricted` Pod Security Standard) for a numeric user.
 */
export const ECHO_UID = 65532;
