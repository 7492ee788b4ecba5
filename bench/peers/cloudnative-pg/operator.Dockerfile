# CloudNativePG's operator image: its manager binary at /manager, where both the operator
# Deployment (`/manager controller`) and every instance Pod's `bootstrap-controller` init container
# (`/manager bootstrap /controller/manager`) expect it. The binary is built by system.mjs from the
# Go module and copied into the build context; it is static (CGO_ENABLED=0), so the base only has
# to be the one image testenv can build from.
FROM node:20-bookworm-slim
# Readable and executable by any user: instance Pods run the init container as postgres (26).
COPY --chmod=0755 manager /manager
# CNPG's own image runs as 10001; by number, so that runAsNonRoot can be verified.
USER 10001:10001
ENTRYPOINT ["/manager"]
