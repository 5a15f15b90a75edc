import { expect, onTestFinished } from "vitest";
import {
	connectFleet,
	type Fleet,
	type FleetOptions,
	type FleetTargetInput,
	type OpenFleetRunOptions,
	openFleetRun,
} from "../../src/fleet/index.js";
import type { TestCluster } from "./postgres.js";

/** A connection to the fleet closed when the test finishes. */
export async function fleetFor(url: string, options: Omit<FleetOptions, "url"> = {}): Promise<Fleet> {
	const fleet = await connectFleet({ url, ...options });
	onTestFinished(() => fleet.close());
	return fleet;
}

/** `count` targets on `hosts` hosts: `https://hostN.test/p/I`. */
export function targetsOn(count: number, hosts = 1): FleetTargetInput[] {
	return Array.from({ length: count }, (_, i) => ({ url: `https://host${i % hosts}.test/p/${i}` }));
}

export async function* streamOf(targets: readonly FleetTargetInput[]): AsyncIterable<FleetTargetInput> {
	yield* targets;
}

/**
 * A fresh database, a run of `targets` opened by a first worker, and `workers` connections (one each)
 * joined to it.
 */
export async function runWithWorkers(
	cluster: TestCluster,
	targets: readonly FleetTargetInput[],
	workers: number,
	settings: Partial<Omit<OpenFleetRunOptions, "source" | "jobName">> = {},
) {
	const url = await cluster.createDatabase();
	const joined = [];
	for (let i = 0; i < workers; i++) {
		const fleet = await fleetFor(url, { maxConnections: 2 });
		const opened = await openFleetRun(fleet, {
			jobName: "job",
			concurrencyLimit: 10,
			...settings,
			source: () => streamOf(targets),
		});
		if (opened.outcome === "complete" || opened.outcome === "changed")
			throw new Error(`the new run is ${opened.outcome}`);
		joined.push({ fleet, worker: opened.worker, run: opened.run });
	}
	return { url, workers: joined, runId: joined[0]!.run.id };
}

/**
 * A worker's last JSON line says the fleet run is done: its summary (complete), or — a worker that joined
 * once the others had done every target — that it found the fleet run complete.
 */
export function expectFleetRunDone(stdout: string): void {
	const last = JSON.parse(stdout.trim().split("\n").at(-1)!);
	if (last.skipped !== undefined) expect(last).toMatchObject({ skipped: "fleet_complete" });
	else expect(last).toMatchObject({ complete: true });
}

/** A parameter as a SQL literal for `EXECUTE name(…)`: numbers, text, null, and arrays of them. */
export function sqlLiteral(value: unknown): string {
	const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
	if (value === null || value === undefined) return "NULL";
	if (typeof value === "number" || typeof value === "boolean") return String(value);
	if (Array.isArray(value))
		return quote(
			`{${value.map((item) => (item === null ? "NULL" : `"${String(item).replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}`,
		);
	return quote(String(value));
}
