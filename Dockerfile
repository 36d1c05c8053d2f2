# Portico's image: the release build made by scripts/release.sh (the same script CI
# builds and tests) on the runtime filesystem scripts/image.sh assembles from pinned
# Debian packages (libc, libgcc_s, CA certificates, tzdata; a non-root user 65532),
# and nothing else. `scripts/image.sh oci` writes the same two trees, with this file's
# runtime configuration, as an OCI image without an engine: that is the image the
# in-cluster tests run. Works with a read-only root filesystem (nothing is written at
# run time). Every tool comes from a package registry: rustup's toolchain image,
# crates.io, npm (binaryen) and Debian.
#
#   docker build -t portico .
#   docker run --read-only -p 3000:3000 -e KUBECONFIG=/kube/config -v ~/.kube:/kube:ro portico

FROM rust:1.95-bookworm AS build
WORKDIR /src
# The build tools first, from the files that pin them, so source edits keep this layer.
COPY Cargo.toml Cargo.lock ./
COPY scripts/install.sh scripts/install.sh
COPY scripts/binaryen/package.json scripts/binaryen/package-lock.json scripts/binaryen/
RUN bash scripts/install.sh --for-build
# The runtime filesystem, from its recipe alone.
COPY scripts/image.sh scripts/image.sh
COPY scripts/image/packages.txt scripts/image/packages.txt
RUN bash scripts/image.sh rootfs /rootfs
COPY . .
RUN bash scripts/release.sh /out

FROM scratch
COPY --from=build /rootfs /
# portico, hash.txt (read from beside the binary) and site/.
COPY --from=build /out /app
# Token mode: people sign in with their own Kubernetes token. Local mode (the binary's
# default, for a developer's machine) refuses a non-loopback address and in-cluster runs.
ENV PORTICO_SITE_ROOT=/app/site \
    PORTICO_IDENTITY=token \
    PORTICO_LISTEN=0.0.0.0:3000 \
    PORTICO_LOG_FORMAT=json \
    LEPTOS_HASH_FILES=true \
    LEPTOS_ENV=PROD
USER 65532:65532
EXPOSE 3000
ENTRYPOINT ["/app/portico"]
