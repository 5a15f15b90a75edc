import { afterAll } from "vitest";
import { startCluster, type TestCluster } from "./postgres-cluster.js";

export { startCluster, type TestCluster } from "./postgres-cluster.js";

/**
 * One cluster for the calling test file, started on first use and stopped after its last test. A start
 * that fails throws into the test that asked, with the reason.
 */
export function useCluster(): () => Promise<TestCluster> {
	let started: Promise<TestCluster> | null = null;
	afterAll(async () => {
		const cluster = started === null ? null : await started.catch(() => null);
		await cluster?.stop();
	});
	return () => {
		started ??= startCluster();
		return started;
	};
}
