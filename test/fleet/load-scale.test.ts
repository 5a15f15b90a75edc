import { expect, it } from "vitest";
import { type Fleet, openFleetRun } from "../../src/fleet/index.js";
import { fleetFor, sqlLiteral, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

interface PlanNode {
	readonly "Actual Rows": number;
	readonly "Actual Loops": number;
	readonly Plans?: readonly PlanNode[];
}

interface SentStatement {
	readonly text: string;
	readonly values: unknown[];
	readonly name: string | undefined;
}

/** The loading statement (the one that inserts targets) as `fleet` last sent it, inside a transaction or not. */
function watchLoads(fleet: Fleet): () => SentStatement {
	let seen: SentStatement | null = null;
	const watch =
		(query: Fleet["query"]): Fleet["query"] =>
		(text, values, name) => {
			if (text.includes("INSERT INTO targets")) seen = { text, values: values ?? [], name };
			return query(text, values, name);
		};
	fleet.query = watch(fleet.query.bind(fleet));
	const transaction = fleet.transaction.bind(fleet);
	fleet.transaction = (work) => transaction((query) => work(watch(query)));
	return () => {
		if (seen === null) throw new Error("no batch of targets was loaded");
		return seen;
	};
}

/**
 * Rows every node of `statement`'s plan handled (rows × loops, CTE scans included), as the connection
 * that sent it runs it: by name when it was prepared (the plan PostgreSQL's cache picks for it there after
 * many executions), else as text. Run in a transaction rolled back after; unlike time, a count.
 */
async function rowsHandled(fleet: Fleet, statement: SentStatement): Promise<number> {
	let plan: PlanNode | null = null;
	const [text, values] =
		statement.name === undefined
			? [`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values]
			: [
					`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${statement.name}(${statement.values.map(sqlLiteral).join(", ")})`,
					[],
				];
	await fleet
		.transaction(async (query) => {
			const [row] = await query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(text, values);
			plan = row!["QUERY PLAN"][0]!.Plan;
			throw new Error("rolled back");
		})
		.catch((error: unknown) => {
			if (plan === null) throw error;
		});
	const walk = (node: PlanNode): number =>
		node["Actual Rows"] * node["Actual Loops"] + (node.Plans ?? []).reduce((sum, child) => sum + walk(child), 0);
	return walk(plan!);
}

it("a batch of targets loaded into a run of 10,000 handles about its own rows, not the run's (nor the run's times the batch's)", async () => {
	const url = await (await cluster()).createDatabase();
	// One connection, as a loading worker's statements reuse theirs: whatever it prepares is prepared there.
	const fleet = await fleetFor(url, { maxConnections: 1 });
	const lastLoad = watchLoads(fleet);
	let handled: number | null = null;
	// Once 10 batches are in, and before the load's end (statistics are gathered then): the next batch's
	// statement, as this connection would run it.
	async function* source() {
		yield* targetsOn(10_000, 10_000);
		const load = lastLoad();
		const keys = targetsOn(11_000, 11_000)
			.slice(10_000)
			.map((target) => target.url)
			.sort();
		const values = [...load.values];
		values[1] = keys;
		values[2] = keys;
		values[3] = keys;
		values[4] = keys.map((key) => new URL(key).host);
		values[5] = keys.map(() => 0);
		values[6] = keys.map(() => null);
		values[7] = keys.map(() => null);
		values[8] = keys.map(() => null);
		handled = await rowsHandled(fleet, { ...load, values });
	}
	const opened = await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 10, source });
	expect(opened.outcome).toBe("opened");
	console.info(`a batch of 1,000 loaded into a run of 10,000 targets: ${handled} rows handled by its plan`);
	// ~16,000 here: each of the batch's keys probed in the run's key index. Joined, the generic plan the
	// prepared statement got while the load was under way (no statistics yet) handled the batch's rows
	// once for every target loaded: ~10,000,000; planned per batch, the join read every target of the run
	// once: ~47,000, growing with the run.
	expect(handled).not.toBeNull();
	expect(handled).toBeLessThan(25_000);
}, 120_000);
