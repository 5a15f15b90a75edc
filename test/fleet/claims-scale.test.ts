import { expect, it } from "vitest";
import { addDiscovered, claimTargets, completeTarget, type Fleet } from "../../src/fleet/index.js";
import { fleetFor, runWithWorkers, sqlLiteral, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

interface PlanNode {
	readonly "Node Type": string;
	readonly "Relation Name"?: string;
	readonly "Actual Rows": number;
	readonly "Actual Loops": number;
	readonly "Rows Removed by Filter"?: number;
	readonly "Rows Removed by Index Recheck"?: number;
	readonly "Shared Hit Blocks": number;
	readonly "Shared Read Blocks": number;
	readonly Plans?: readonly PlanNode[];
}

interface SentStatement {
	readonly text: string;
	readonly values: unknown[];
}

/** The claim statement (text and parameters) as `claimTargets` on `fleet` last sent it. */
function watchClaims(fleet: Fleet): () => SentStatement {
	let seen: SentStatement | null = null;
	const query = fleet.query.bind(fleet);
	fleet.query = (text, values, name) => {
		if (name === "fleet_claim") seen = { text, values: values ?? [] };
		return query(text, values, name);
	};
	return () => {
		if (seen === null) throw new Error("no claim was sent");
		return seen;
	};
}

/**
 * What one run of the claim reads of `targets` and `hosts`, by PostgreSQL's own count (EXPLAIN ANALYZE,
 * BUFFERS, in a transaction rolled back after): the rows its scans of them return or filter out, and the
 * pages those scans touch. Unlike its time, neither depends on how busy the machine is.
 */
async function claimReads(fleet: Fleet, claim: SentStatement): Promise<{ rows: number; pages: number }> {
	let plan: PlanNode | null = null;
	await fleet
		.transaction(async (query) => {
			const [row] = await query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
				`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claim.text}`,
				claim.values,
			);
			plan = row!["QUERY PLAN"][0]!.Plan;
			throw new Error("rolled back");
		})
		.catch((error: unknown) => {
			if (plan === null) throw error;
		});
	const reads = { rows: 0, pages: 0 };
	const walk = (node: PlanNode) => {
		const relation = node["Relation Name"];
		// Scans only: a bitmap's index scan is counted in its heap scan, an update's rows in the scan under it.
		const scan = node["Node Type"].endsWith("Scan") && node["Node Type"] !== "Bitmap Index Scan";
		if (scan && (relation === "targets" || relation === "hosts")) {
			const rows =
				node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0);
			reads.rows += rows * node["Actual Loops"];
			reads.pages += node["Shared Hit Blocks"] + node["Shared Read Blocks"];
		}
		for (const child of node.Plans ?? []) walk(child);
	};
	walk(plan!);
	return reads;
}

it("a claim stays cheap over 20,000 hosts, before and after half of them are drained", async () => {
	const { workers } = await runWithWorkers(await cluster(), targetsOn(20_000, 20_000), 1);
	const { fleet, worker } = workers[0]!;
	const lastClaim = watchClaims(fleet);
	const [hostPages] = await fleet.query<{ pages: number }>(
		"SELECT relpages AS pages FROM pg_class WHERE oid = 'hosts'::regclass",
	);
	const costs: Array<{ rows: number; pages: number }> = [];
	for (const drain of [0, 10_000]) {
		for (let left = drain; left > 0; ) {
			const batch = await claimTargets(fleet, worker, 200, 60_000);
			await Promise.all(batch.map((lease) => completeTarget(fleet, lease, {}, 1)));
			left -= batch.length;
		}
		const [lease] = await claimTargets(fleet, worker, 1, 60_000);
		await completeTarget(fleet, lease!, {}, 1);
		costs.push(await claimReads(fleet, lastClaim()));
	}
	console.info(
		`a claim over 20,000 hosts (${hostPages!.pages} pages) reads ${costs.map(({ rows, pages }) => `${rows} rows, ${pages} pages`).join(", then ")}`,
	);
	// A few rows and pages here (more after the drain: dead index entries); without statistics after
	// loading, the claim walks every host and target: 60,000 rows, 61,000 pages.
	for (const { rows, pages } of costs) {
		expect(rows).toBeLessThan(100);
		expect(pages).toBeLessThan(hostPages!.pages);
	}
}, 120_000);

it("the claim as a worker's connection runs it, prepared and executed many times, reads only the hosts it takes, whatever the database's plan_cache_mode", async () => {
	const HOSTS = 2000;
	const { url, workers } = await runWithWorkers(await cluster(), targetsOn(HOSTS, HOSTS), 1);
	const { fleet: admin, worker } = workers[0]!;
	// A database whose default is a generic plan for every prepared statement (a setting some tuning guides
	// and poolers give): the claim's generic plan, made for no count in particular, walks every host.
	const [database] = await admin.query<{ name: string }>("SELECT current_database() AS name");
	await admin.query(`ALTER DATABASE "${database!.name}" SET plan_cache_mode = force_generic_plan`);
	// One connection: the claim's prepared statement and the EXPLAIN below are on the same one, as a
	// worker's claims are on the connections it keeps.
	const fleet = await fleetFor(url, { maxConnections: 1 });
	const lastClaim = watchClaims(fleet);
	// Past the executions after which PostgreSQL may switch a prepared statement to a generic plan (5).
	for (let i = 0; i < 8; i++) {
		const [lease] = await claimTargets(fleet, worker, 1, 60_000, { slots: [0] });
		await completeTarget(fleet, lease!, {}, 1);
	}
	const { values } = lastClaim();
	const [prepared] = await fleet.query(
		"SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = 'fleet_claim'",
	);
	expect(prepared).toEqual({ n: 1 });
	const reads = await claimReads(fleet, {
		text: `EXECUTE fleet_claim(${values.map(sqlLiteral).join(", ")})`,
		values: [],
	});
	console.info(`the prepared claim over ${HOSTS} hosts reads ${reads.rows} rows, ${reads.pages} pages`);
	// 6 rows here; a generic plan reads every host (about 2,000 rows).
	expect(reads.rows).toBeLessThan(100);
}, 60_000);

it("a crawl's claim stays cheap with 20,000 links queued and a seed still in flight: whether a seed is queued is one probe", async () => {
	const { workers } = await runWithWorkers(await cluster(), targetsOn(2), 1);
	const { fleet, worker } = workers[0]!;
	const [seed, inFlight] = await claimTargets(fleet, worker, 2, 60_000);
	expect(inFlight).toMatchObject({ depth: 0 });
	const links = targetsOn(20_000, 20_000).map((link) => ({ url: `${link.url}/found` }));
	for (let i = 0; i < links.length; i += 2000) await addDiscovered(fleet, seed!, links.slice(i, i + 2000));
	await completeTarget(fleet, seed!, {}, 1);
	await fleet.query("ANALYZE targets, hosts");
	const lastClaim = watchClaims(fleet);
	const [lease] = await claimTargets(fleet, worker, 1, 60_000);
	expect(lease).toMatchObject({ depth: 1 });
	const reads = await claimReads(fleet, lastClaim());
	console.info(`a crawl's claim over 20,000 queued links reads ${reads.rows} rows, ${reads.pages} pages`);
	// 7 rows here: the shallowest queued depth is the first entry of targets_queued_depth.
	expect(reads.rows).toBeLessThan(100);
}, 120_000);
