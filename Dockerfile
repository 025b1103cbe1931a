# rlwatch: `docker build -t rlwatch .` then
#   docker run -v /path/to/runs:/runs:ro -v rlwatch-data:/data rlwatch start /runs
# The database lives on the /data volume; mount a config at /config/rlwatch.yaml and pass --config to use one.
FROM node:22-bookworm-slim AS deps
# better-sqlite3 compiles its native addon when no prebuilt binary can be fetched
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY src ./src
# `prepare` bundles src/ into dist/ (esbuild is a development dependency), then the build tools are pruned: the image
# runs the bundle, no TypeScript compile. Of better-sqlite3 the runtime loads lib/ and its addon by path
# (src/store/sqlite/sqliteAddon.ts): its SQLite sources and compile leftovers (26 MB of 28 when built here) stay behind.
RUN npm ci && npm prune --omit=dev \
  && cd node_modules/better-sqlite3 && mv build/Release/better_sqlite3.node /tmp/ \
  && rm -rf build deps src && mkdir -p build/Release && mv /tmp/better_sqlite3.node build/Release/

FROM node:22-bookworm-slim
# the alert cards' charts draw their text with DejaVu Sans (src/render/fonts.ts); the slim image has no fonts at all
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY migrations ./migrations
COPY samples ./samples
ENV NODE_ENV=production RLWATCH_DB=/data/rlwatch.db
# not root: a planted file in a watched folder can then reach only what the node user can read
RUN mkdir /data && chown node:node /data
USER node
VOLUME /data
# alive = the bundle starts and opens the database RLWATCH_DB names (the /data file, or the PostgreSQL server) and reads
# the outbox, one query: about 0.15 s on SQLite, 0.8 s on PostgreSQL on a busy 2-core machine. A dead `start` needs
# no check: it is the container's process, so the container stops with it.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD /app/bin/rlwatch outbox --json > /dev/null
ENTRYPOINT ["/app/bin/rlwatch"]
CMD ["start"]
