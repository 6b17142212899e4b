# API image: `qr-art serve` (HTTP API, event applier, webhooks). No GPU, no models; the worker
# image is Dockerfile.cuda. Both run as uid 10001 (deploy/base sets runAsUser to match).
#   docker build -t qr-art-api .
#   docker run -p 8080:8080 -e NATS_URL=nats://nats:4222 -e DATABASE_URL=postgres://... \
#     -e WEBHOOK_SECRET=whsec_... qr-art-api
ARG NODE_VERSION=20

# Compile src/ to dist/ (bin/qr-art.js runs dist/ when it exists). The compiler and the type
# packages are dev dependencies; none of their install scripts is needed to compile.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

FROM node:${NODE_VERSION}-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json .npmrc ./
# onnxruntime-node is a dependency of the whole package (the CLI's worker side), and its
# package already carries the CPU runtime; its install script would only fetch the CUDA
# provider from NuGet, which the API never loads. `skip` stops that download (npm 11 skips it
# through package.json's allowScripts too; the npm 10 of Node 20 images reads only this variable).
RUN ONNXRUNTIME_NODE_INSTALL=skip npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force
COPY bin ./bin
COPY --from=build /app/dist ./dist
# The playground's page, styles and browser modules: served as files, so tsc does not emit them.
COPY --from=build /app/src/api/playground ./dist/api/playground
RUN groupadd --system --gid 10001 qrart && useradd --system --uid 10001 --gid 10001 --home /app qrart
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
# The API (PORT) and its Prometheus metrics (METRICS_PORT, docs/metrics.md).
ENV PORT=8080 METRICS_PORT=9464
EXPOSE 8080 9464
CMD ["node", "bin/qr-art.js", "serve"]
