#!/usr/bin/env node
// The npm registry mirror of this workplace serves Biome's binary only for linux-x64, so `npm install`
// here writes a package-lock.json without Biome's other platform packages, and `npm ci` then refuses
// the lock as out of sync. This adds the missing optional entries (version, os, cpu, libc), which npm
// skips on platforms they are not for. Run it after any `npm install` that rewrites the lock.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;
const biome = packages["node_modules/@biomejs/biome"];
if (!biome) process.exit(0);
const platforms = {
	"android-arm64": ["android", "arm64"],
	"android-x64": ["android", "x64"],
	"darwin-arm64": ["darwin", "arm64"],
	"darwin-x64": ["darwin", "x64"],
	"linux-arm64": ["linux", "arm64", "glibc"],
	"linux-arm64-musl": ["linux", "arm64", "musl"],
	"linux-x64": ["linux", "x64", "glibc"],
	"linux-x64-musl": ["linux", "x64", "musl"],
	"win32-arm64": ["win32", "arm64"],
	"win32-x64": ["win32", "x64"],
};
let added = 0;
for (const [name, [os, cpu, libc]] of Object.entries(platforms)) {
	const key = `node_modules/@biomejs/cli-${name}`;
	if (packages[key]) continue;
	packages[key] = {
		version: biome.version,
		cpu: [cpu],
		dev: true,
		...(libc ? { libc: [libc] } : {}),
		license: biome.license,
		optional: true,
		os: [os],
		engines: biome.engines,
	};
	added += 1;
}
lock.packages = Object.fromEntries(
	Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} platform entries added`);
