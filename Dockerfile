# Gatehouse container image. Build from the repository root:
#   docker build -t gatehouse .
# Run (SQLite in the /data volume):
#   docker run -p 3000:3000 -v gatehouse-data:/data -e GATEHOUSE_UPSTREAM_URL=http://llama-swap:8080 gatehouse
# See docs/deployment.md (compose, PostgreSQL, replicas, reverse proxies, backups).

# ---- build: compile better-sqlite3 from source, TypeScript and the dashboard ----
# Node 24 LTS, pinned (package.json engines: >=20.19). Both stages use the same image so the
# native module built here matches the runtime's ABI.
FROM node:24.14.0-bookworm-slim AS build

# better-sqlite3 is compiled from source (.npmrc: build-from-source=true), never downloaded,
# against the headers this image ships in /usr/local/include/node (no download either).
ENV npm_config_nodedir=/usr/local
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, so this layer is reused while only sources change. Scripts are held
# back (the root `prepare` would build before the sources are here) and the one native
# module is then built explicitly.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3

COPY . .
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts

# ---- runtime: no compilers, no dev dependencies, not root ----
FROM node:24.14.0-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    GATEHOUSE_DATA_DIR=/data

WORKDIR /app
# Owned by root and read-only to the process: only /data (and a mounted llama-swap config
# directory) is writable.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
# The dashboard is found by walking up to the directory holding web/index.html.
COPY --from=build /app/web/index.html ./web/index.html
COPY --from=build /app/web/dist ./web/dist

RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node

EXPOSE 3000
# No curl in the slim image: Node's own fetch probes the liveness route.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# SIGTERM lets in-flight requests finish for GATEHOUSE_SHUTDOWN_GRACE (30 s by default):
# give `docker stop` more than that (`--time 45`, compose `stop_grace_period: 45s`).
STOPSIGNAL SIGTERM
ENTRYPOINT ["./bin/gatehouse"]
CMD ["serve"]
