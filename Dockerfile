# Portico's image: a cargo-leptos release build, then a non-root runtime holding only the
# binary and the site assets. Works with a read-only root filesystem (nothing is written
# at run time). Every tool comes from a package registry: rustup's toolchain image,
# crates.io and Debian.
#
#   docker build -t portico .
#   docker run --read-only -p 3000:3000 -e KUBECONFIG=/kube/config -v ~/.kube:/kube:ro portico

FROM rust:1.95-bookworm AS build
RUN rustup target add wasm32-unknown-unknown \
 && apt-get update && apt-get install -y --no-install-recommends binaryen \
 && rm -rf /var/lib/apt/lists/*
RUN cargo install cargo-leptos --version 0.3.10 --locked
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
RUN cargo install wasm-bindgen-cli --version "$(awk '$0=="name = \"wasm-bindgen\""{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)"
COPY . .
RUN cargo leptos build --release \
 && mkdir -p /out \
 && cp target/release/portico /out/portico \
 && cp -r target/site /out/site

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/portico /app/portico
COPY --from=build /out/site /app/site
ENV PORTICO_SITE_ROOT=/app/site \
    PORTICO_LISTEN=0.0.0.0:3000 \
    PORTICO_LOG_FORMAT=json \
    LEPTOS_ENV=PROD
USER 65532:65532
EXPOSE 3000
ENTRYPOINT ["/app/portico"]
