/**
 * The fleet's kill trials (`npm run bench -- --only=fleet-kills`; not in a full run): TRIALS times, 4
 * workers on one job through a throwaway PostgreSQL, two of them SIGKILLed at random moments and replaced.
 * The emulator hands every fetch slower than its 80 ms timeout over to a task, so both windows of the
 * fleet's pay-once promise are met: realtime fetches in flight at a kill (sent again by the successor),
 * and tasks (their id stored on the lease: polled, not sent again). Reports per kill: fetches paid twice,
 * and how many of those were tasks whose id the dead worker had not stored yet. Run on a list of targets,
 * then on a crawl of the same number of pages (a binary tree of links from one seed: each page's links
 * enter the fleet's frontier under its lease, so a kill mid-page must neither lose nor repeat a page).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmulator } from "../src/emulator/index.js";
import { queryDatabase as query, startCluster } from "../test/helpers/postgres-cluster.js";

const TRIALS = 20;
const TARGETS = 40;
const WORKERS = 4;
const KILLS = 2;
const LIMIT = 6;

export interface FleetKillsBench {
	readonly kind: "list" | "crawl";
	readonly trials: number;
	readonly kills: number;
	readonly targets: number;
	/** Every trial: every target exactly one record in the fleet (a crawl's: at its breadth-first depth). */
	readonly everyTargetOnce: boolean;
	/** Fetches the service charged that no record holds, over all trials (each a re-send after a kill). */
	readonly paidTwice: number;
	/** Of those, fetches that had become tasks (the id-not-yet-stored window). */
	readonly paidTwiceTasks: number;
	/** Records of fetches that became tasks (followed by poll to their end, by whoever held them). */
	readonly tasksPolled: number;
	readonly peakInFlight: number;
}

export async function benchFleetKills(
	root: string,
	quick: boolean,
	log: (line: string) => void,
	kind: "list" | "crawl" = "list",
): Promise<FleetKillsBench> {
	const bin = join(root, "dist", "cli", "bin.js");
	if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build first`);
	const trials = quick ? 4 : TRIALS;
	// A target site answering in 20–200 ms: the emulator makes a task of every fetch past 80 ms.
	// The crawl's pages: /c/N links to /c/2N+1 and /c/2N+2 while those are under TARGETS (depth: log2(N+1)).
	const site = createServer((req, res) => {
		const n = Number(/^\/c\/(\d+)$/.exec(req.url ?? "")?.[1] ?? -1);
		const links = n < 0 ? [] : [2 * n + 1, 2 * n + 2].filter((child) => child < TARGETS);
		const body = `<p>page</p>${links.map((child) => `<a href="/c/${child}">${child}</a>`).join("")}`;
		setTimeout(() => res.writeHead(200, { "content-type": "text/html" }).end(body), 20 + Math.random() * 180);
	});
	await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
	const origin = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
	const emulator = await startEmulator({ scenario: { concurrency: LIMIT, timeout_ms: 80, credits: 1e9 } });
	const cluster = await startCluster();
	const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-fleet-kills-"));
	let everyTargetOnce = true;
	let paidTwice = 0;
	let paidTwiceTasks = 0;
	let tasksPolled = 0;
	let peakInFlight = 0;
	try {
		const job = join(dir, "kills.yaml");
		const pages =
			kind === "crawl"
				? ["crawl: {max_depth: 10, robots: ignore}", `  - ${origin}/c/0`]
				: Array.from({ length: TARGETS }, (_, n) => `  - ${origin}/p/${n}`);
		const head = kind === "crawl" ? [pages[0]!, "targets:", pages[1]!] : ["targets:", ...pages];
		writeFileSync(job, ["name: kills", "defaults: {mode: request}", ...head, ""].join("\n"));
		const env = {
			...process.env,
			SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
			SCRAPEJOB_API_URL: emulator.apiUrl,
			SCRAPEJOB_LOCK_LEASE_MS: "2000",
		};
		for (let trial = 0; trial < trials; trial++) {
			const url = await cluster.createDatabase();
			emulator.ledger.clear();
			const start = () =>
				spawn(
					process.execPath,
					[bin, "run", job, "--quiet", "--out", join(dir, `out-${trial}`), "--fleet", url, "--fleet-run", "t"],
					{
						env,
						stdio: "ignore",
					},
				);
			const workers = Array.from({ length: WORKERS }, start);
			const exited = workers.map((child) => new Promise<void>((resolve) => child.on("exit", () => resolve())));
			for (let kill = 0; kill < KILLS; kill++) {
				await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 900));
				const index = workers.findIndex((child) => child.exitCode === null && child.signalCode === null);
				if (index < 0) break;
				workers[index]!.kill("SIGKILL");
				await exited[index];
				const next = start();
				workers.push(next);
				exited.push(new Promise<void>((resolve) => next.on("exit", () => resolve())));
			}
			await Promise.all(exited);
			const records = await query<{ url: string; task_id: string | null; depth: number }>(
				url,
				"SELECT record->>'url' AS url, record->>'task_id' AS task_id, depth FROM scrapejob.records JOIN scrapejob.targets USING (run_id, target_id)",
			);
			if (records.length !== TARGETS || new Set(records.map((row) => row.url)).size !== TARGETS)
				everyTargetOnce = false;
			const bfsDepth = (pageUrl: string) => Math.floor(Math.log2(Number(pageUrl.split("/").at(-1)) + 1));
			if (kind === "crawl" && records.some((row) => row.depth !== bfsDepth(row.url))) everyTargetOnce = false;
			const recordedTasks = new Set(records.map((row) => row.task_id).filter((id): id is string => id !== null));
			const sends = emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0);
			const byUrl = new Map<string, typeof sends>();
			for (const entry of sends) byUrl.set(entry.url ?? "", [...(byUrl.get(entry.url ?? "") ?? []), entry]);
			for (const entries of byUrl.values()) {
				for (const entry of entries.slice(1)) {
					paidTwice += 1;
					if (entry.taskId !== undefined || entries[0]!.taskId !== undefined) paidTwiceTasks += 1;
				}
			}
			// Tasks whose record names them: each was followed to its end once, by whoever held it then.
			tasksPolled += recordedTasks.size;
			peakInFlight = Math.max(peakInFlight, emulator.ledger.maxInFlight());
			log(
				`fleet-kills (${kind}): trial ${trial + 1}/${trials}: ${records.length} records, ${sends.length} paid fetches`,
			);
		}
		return {
			kind,
			trials,
			kills: trials * KILLS,
			targets: TARGETS,
			everyTargetOnce,
			paidTwice,
			paidTwiceTasks,
			tasksPolled,
			peakInFlight,
		};
	} finally {
		await cluster.stop();
		await emulator.close();
		await new Promise((resolve) => site.close(resolve));
		rmSync(dir, { recursive: true, force: true });
	}
}

export function formatFleetKillsRow(row: FleetKillsBench): string {
	return [
		`fleet kill trials (${row.kind === "crawl" ? "a crawl" : "a list"}): ${row.trials} trials × ${WORKERS} workers on ${row.targets} ${row.kind === "crawl" ? "pages" : "targets"}, ${row.kills} SIGKILLs with replacements`,
		`every target one record in the fleet${row.kind === "crawl" ? ", at its breadth-first depth" : ""}: ${row.everyTargetOnce ? "yes" : "NO"}`,
		`fetches paid twice: ${row.paidTwice} (${(row.paidTwice / row.kills).toFixed(2)} per kill; of them tasks: ${row.paidTwiceTasks})`,
		`records of fetches that became tasks: ${row.tasksPolled}`,
		`peak in flight: ${row.peakInFlight} of ${LIMIT}`,
	].join("\n");
}
