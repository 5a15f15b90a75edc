# scrapejob as a container image:
#   docker build -t registry.example.com/scrapejob:1.0 .
#   docker run --rm -e SCRAPEJOB_ACCOUNT_KEY -v "$PWD/output:/data/output" registry.example.com/scrapejob:1.0 \
#     run jobs/example-shop.yaml --out /data/output
# The runtime image holds the built CLI (dist/), the repository's jobs/ and the production
# dependencies only; it runs `scrapejob` as the unprivileged user `node` (uid 1000) from /app.
# test/cli/image-install.test.ts runs the runtime stage's install steps outside Docker.

# Build: every dependency, then the TypeScript build.
FROM node:24-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (the build) needs the sources, copied below. The one native module,
# better-sqlite3, ships prebuilt Node-API binaries in its package: nothing to compile.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle-cli.mjs scripts/bundled-modules.js scripts/
COPY src src
RUN npm run build

# Production dependencies only, in a stage of its own (the runtime image gets node_modules, not npm's cache).
FROM node:24-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: without devDependencies there is no TypeScript to run `prepare` with.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /src/dist dist
COPY package.json ./
COPY jobs jobs
# output/: the default --out, writable by the user (mount a volume there, or pass --out).
RUN chmod 755 dist/cli/bin.js && ln -s /app/dist/cli/bin.js /usr/local/bin/scrapejob \
	&& mkdir output && chown node:node output
USER node
ENTRYPOINT ["scrapejob"]
CMD ["--help"]
