/**
 * The economics row of `npm run bench` (`--only=economics`): credits per useful record of
 * `mode: adaptive` — its first run (learning) and its second (starting where the first ended) — against
 * `auto` and `browser` on the same targets, over four emulated domains: one that serves datacenter
 * addresses (`127.0.0.1`), one that blocks them (`localhost`, `block_datacenter`), one that needs a browser
 * (`127.0.0.2`, `browser_only`), one that refuses every fetch (`127.0.0.3`, `deny_all`); and the forecast's
 * error on the second adaptive run. Repeated: the first run's figures depend on how many targets of a
 * domain are in flight before its first one has learned the rung.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDemoSite, startEmulator } from "../src/emulator/index.js";
import { runJobFile } from "../src/library/index.js";

const PER_DOMAIN = 100;
const CONCURRENCY = 10;
const LATENCY_MS = 5;
const REPEAT = 3;
const DOMAINS = ["127.0.0.1", "localhost", "127.0.0.2", "127.0.0.3"] as const;
const RUNS = ["adaptive, first run", "adaptive, second run", "auto", "browser"] as const;

type Figures = Record<string, { credits: number; useful: number }>;

export interface EconomicsBench {
	readonly perDomain: number;
	readonly repeat: number;
	/** Per run kind: credits per useful record over every domain (median, min, max over the repeats). */
	readonly overall: Record<string, Spread>;
	/** Per run kind and domain: credits per useful record, median over the repeats (null: no useful record). */
	readonly byDomain: Record<string, Record<string, number | null>>;
	/** The forecast's error on the second adaptive run, (spent − expected) / expected. */
	readonly forecastError: Spread;
	readonly wallMs: number;
}

interface Spread {
	readonly median: number;
	readonly min: number;
	readonly max: number;
}

function spread(values: readonly number[]): Spread {
	const sorted = [...values].sort((a, b) => a - b);
	return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

/** Credits and useful records per domain, read from a run's results.jsonl. */
function figuresOf(runDir: string): Figures {
	const figures: Figures = {};
	for (const line of readFileSync(join(runDir, "results.jsonl"), "utf8").split("\n")) {
		if (line === "") continue;
		const record = JSON.parse(line) as { url: string; credits_used: number; useful?: boolean };
		const domain = new URL(record.url).hostname;
		const entry = figures[domain] ?? { credits: 0, useful: 0 };
		figures[domain] = entry;
		entry.credits += record.credits_used;
		if (record.useful) entry.useful += 1;
	}
	return figures;
}

function perUseful(entries: ReadonlyArray<{ credits: number; useful: number }>): number | null {
	const credits = entries.reduce((sum, entry) => sum + entry.credits, 0);
	const useful = entries.reduce((sum, entry) => sum + entry.useful, 0);
	return useful > 0 ? credits / useful : null;
}

function jobText(name: string, mode: string, urls: Record<string, string>, perDomain: number): string {
	const targets: string[] = [];
	for (const domain of DOMAINS)
		for (let index = 1; index <= perDomain; index++) targets.push(`  - ${urls[domain]}/product/${index}`);
	return [
		`name: ${name}`,
		`concurrency: ${CONCURRENCY}`,
		// The breaker would park the refusing domain: left on, it hides what each mode spends there.
		"breaker: false",
		`defaults: {mode: ${mode}}`,
		"retry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}",
		"extract:",
		"  price: {css: .price, required: true}",
		"targets:",
		...targets,
		"",
	].join("\n");
}

export async function benchEconomics(quick: boolean, log: (line: string) => void): Promise<EconomicsBench> {
	const perDomain = quick ? PER_DOMAIN / 4 : PER_DOMAIN;
	const started = performance.now();
	const overall: Record<string, number[]> = Object.fromEntries(RUNS.map((run) => [run, []]));
	const byDomain: Record<string, Record<string, number[]>> = Object.fromEntries(
		RUNS.map((run) => [run, Object.fromEntries(DOMAINS.map((domain) => [domain, []]))]),
	);
	const errors: number[] = [];
	for (let round = 0; round < REPEAT; round++) {
		const first = await startDemoSite({ pages: perDomain });
		const second = await startDemoSite({ pages: perDomain, host: "127.0.0.2" });
		const emulator = await startEmulator({
			scenario: {
				concurrency: CONCURRENCY,
				latency_ms: LATENCY_MS,
				credits: 1_000_000,
				block_datacenter: ["//localhost:"],
				browser_only: ["//127.0.0.2:"],
				deny_all: ["//127.0.0.3:"],
			},
		});
		const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-economics-"));
		try {
			const urls = {
				"127.0.0.1": first.url,
				localhost: `http://localhost:${first.port}`,
				"127.0.0.2": second.url,
				"127.0.0.3": `http://127.0.0.3:${first.port}`,
			};
			const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
			const run = async (kind: (typeof RUNS)[number], name: string, mode: string) => {
				const job = join(dir, `${name}.yaml`);
				writeFileSync(job, jobText(name, mode, urls, perDomain));
				const result = await runJobFile(job, { env, cwd: dir, out: "out" });
				const figures = figuresOf(result.run_dir);
				overall[kind]!.push(perUseful(Object.values(figures)) ?? Number.NaN);
				for (const domain of DOMAINS) {
					const value = perUseful(figures[domain] ? [figures[domain]] : []);
					byDomain[kind]![domain]!.push(value ?? Number.NaN);
				}
				return result;
			};
			log(`economics: round ${round + 1}/${REPEAT}, ${DOMAINS.length} × ${perDomain} targets per run`);
			await run("adaptive, first run", "adaptive", "adaptive");
			const learned = await run("adaptive, second run", "adaptive", "adaptive");
			errors.push(learned.forecast?.error ?? Number.NaN);
			await run("auto", "auto", "auto");
			await run("browser", "browser", "browser");
		} finally {
			await emulator.close();
			await first.close();
			await second.close();
			rmSync(dir, { recursive: true, force: true });
		}
	}
	const median = (values: readonly number[]) => {
		const known = values.filter((value) => !Number.isNaN(value));
		return known.length === 0 ? null : spread(known).median;
	};
	return {
		perDomain,
		repeat: REPEAT,
		overall: Object.fromEntries(RUNS.map((run) => [run, spread(overall[run]!)])),
		byDomain: Object.fromEntries(
			RUNS.map((run) => [run, Object.fromEntries(DOMAINS.map((domain) => [domain, median(byDomain[run]![domain]!)]))]),
		),
		forecastError: spread(errors),
		wallMs: performance.now() - started,
	};
}

const fixed = (value: number | null) => (value === null ? "—" : value.toFixed(2));

export function formatEconomicsRow(row: EconomicsBench): string {
	const base = row.overall["adaptive, second run"]!.median;
	const lines = [
		`economics: ${DOMAINS.length} domains × ${row.perDomain} targets a run, ${row.repeat} rounds, ${(row.wallMs / 1000).toFixed(1)} s`,
		"",
		`| run | credits per useful record (median, min–max) | ${DOMAINS.join(" | ")} | adaptive (second run) ÷ this |`,
		`|---|---|${DOMAINS.map(() => "---").join("|")}|---|`,
	];
	for (const run of RUNS) {
		const all = row.overall[run]!;
		lines.push(
			`| ${run} | ${fixed(all.median)} (${fixed(all.min)}–${fixed(all.max)}) | ${DOMAINS.map((domain) => fixed(row.byDomain[run]![domain]!)).join(" | ")} | ${(base / all.median).toFixed(2)} |`,
		);
	}
	const error = row.forecastError;
	lines.push(
		"",
		`forecast error on the second adaptive run: ${(error.median * 100).toFixed(1)} % (${(error.min * 100).toFixed(1)} to ${(error.max * 100).toFixed(1)} %)`,
	);
	return lines.join("\n");
}
