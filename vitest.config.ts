import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		testTimeout: 30_000,
		hookTimeout: 30_000,
		pool: "forks",
		// Both cores: most files wait on loopback servers and child processes (Vitest's default here is
		// cores − 1 = 1 worker: 414 s for the suite against ~285 s with 2).
		maxWorkers: 2,
		// Memory tests measure after a forced collection.
		execArgv: ["--expose-gc"],
		// One temporary folder for the whole run, removed at its end.
		globalSetup: ["./test/helpers/temp-root.ts"],
		// Vitest's own summary, then one plain `N passed, N failed` line for CI logs.
		reporters: ["default", "./test/helpers/plain-summary-reporter.ts"],
	},
});
