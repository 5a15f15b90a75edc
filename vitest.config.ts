import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		testTimeout: 30_000,
		hookTimeout: 30_000,
		pool: "forks",
		// Memory tests measure after a forced collection.
		execArgv: ["--expose-gc"],
		// One temporary folder for the whole run, removed at its end.
		globalSetup: ["./test/helpers/temp-root.ts"],
		// Vitest's own summary, then one plain `N passed, N failed` line for CI logs.
		reporters: ["default", "./test/helpers/plain-summary-reporter.ts"],
	},
});
