import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Files that run in a fresh process each, as every file did before:
 * - those that measure this process's own memory (heap, RSS, array buffers) or its temporary folders by
 *   pid, so that nothing another file left in the worker (a grown heap whose pages RSS reuses, a folder
 *   of the same pid) can hide what they measure;
 * - every file that mocks a module (`vi.mock`, found by reading the files): a mock only reaches modules
 *   loaded after it, and in a shared worker the product's modules were loaded by an earlier file.
 */
const OWN_PROCESS = [
	"test/job/big-source.test.ts",
	"test/job/read-job-text.test.ts",
	"test/job/scan-keys.test.ts",
	"test/run/resume-scale.test.ts",
	...(readdirSync("test", { recursive: true }) as string[])
		.map((name) => join("test", name))
		.filter((path) => path.endsWith(".test.ts") && /\bvi\.(do)?mock\(/.test(readFileSync(path, "utf8"))),
];

export default defineConfig({
	test: {
		testTimeout: 30_000,
		hookTimeout: 30_000,
		pool: "forks",
		// Both cores: most files wait on loopback servers and child processes (Vitest's default here is
		// cores − 1 = 1 worker: 414 s for the suite against ~285 s with 2).
		maxWorkers: 2,
		// Memory tests measure after a forced collection.
		execArgv: ["--expose-gc"],
		// One temporary folder for the whole run, removed at its end; dist/ rebuilt first when src/ is newer
		// (the CLI's tests run dist/cli/bin.js).
		globalSetup: ["./test/helpers/build-dist.ts", "./test/helpers/temp-root.ts"],
		// Vitest's own summary, then one plain `N passed, N failed` line for CI logs.
		reporters: ["default", "./test/helpers/plain-summary-reporter.ts"],
		projects: [
			{ extends: true, test: { name: "own-process", include: OWN_PROCESS } },
			{
				extends: true,
				test: {
					name: "shared-process",
					include: ["test/**/*.test.ts"],
					exclude: [...configDefaults.exclude, ...OWN_PROCESS],
					// A worker process runs file after file with its modules loaded once: re-evaluating the
					// product's modules (and zod, undici, pino, …) for every file was ~40 % of the suite's time.
					// Each file still starts and closes its own servers, emulators and folders.
					isolate: false,
				},
			},
		],
	},
});
