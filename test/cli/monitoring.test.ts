import { execFileSync, spawnSync } from "node:child_process";
import { lstatSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { METRIC_SPECS } from "../../src/library/run-metrics.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { listenForTest } from "../helpers/loopback.js";
import { readDoc } from "../helpers/manual.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/** A loopback server for one test: every request (method, path, body) is kept; `handle` answers. */
async function startReceiver(
	handle: (req: IncomingMessage, res: ServerResponse, body: string) => void = (_req, res) => res.end("OK"),
) {
	const requests: Array<{ method: string; path: string; body: string; at: number }> = [];
	const waiters: Array<{ count: number; resolve: () => void }> = [];
	const server = createServer((req, res) => {
		let body = "";
		req.on("data", (chunk: Buffer) => {
			body += chunk.toString();
		});
		req.on("end", () => {
			requests.push({ method: req.method ?? "", path: req.url ?? "/", body, at: Date.now() });
			for (const waiter of waiters.filter((w) => requests.length >= w.count)) waiter.resolve();
			handle(req, res, body);
		});
	});
	const origin = await listenForTest(server);
	return {
		url: origin,
		requests,
		/** Resolves once `count` requests have arrived (an event, not a sleep). */
		received: (count: number) =>
			new Promise<void>((resolve) => {
				if (requests.length >= count) resolve();
				else waiters.push({ count, resolve });
			}),
	};
}

function jobYaml(site: string, paths: string[], extra: string[] = []): string {
	return [
		"name: nightly",
		"defaults: {mode: request}",
		"output: {content: none}",
		...extra,
		"targets:",
		...paths.map((path) => `  - ${site}${path}`),
		"",
	].join("\n");
}

/** The samples of a Prometheus text file: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
	const out = new Map<string, number>();
	for (const line of text.split("\n")) {
		const match = /^(\S+\{.*\}|\S+)\s+(\S+)$/.exec(line);
		if (match && !line.startsWith("#")) out.set(match[1]!, Number(match[2]));
	}
	return out;
}

function onlyRun(out: string, job: string): string {
	const runs = readdirSync(join(out, job)).filter(isRunFolderName).sort();
	return join(out, job, runs.at(-1)!);
}

const promtool = spawnSync("promtool", ["--version"]).status === 0;

describe("--metrics FILE", () => {
	it.skipIf(!promtool)(
		"writes a file promtool accepts, whose figures are the run's summary (skipped only when promtool is not installed: Debian's prometheus package)",
		async () => {
			const service = await useTestService({ concurrency: 4 });
			const dir = tempDir();
			const out = join(dir, "out");
			const metrics = join(dir, "textfile", "scrapejob.prom");
			const path = writeJob(
				dir,
				"nightly",
				jobYaml(service.site.url, ["/product/1", "/product/2", "/product/3", "/status/404"]),
			);
			const result = await runCli(["run", path, "--out", out, "--quiet", "--metrics", metrics, "--shard", "1/1"], {
				env: service.env,
			});
			expect(result.code).toBe(1);
			const text = readFileSync(metrics, "utf8");
			const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
			expect(check.stdout + check.stderr).toBe("");
			expect(check.status).toBe(0);

			const summary = readSummary(onlyRun(out, "nightly"));
			const values = samples(text);
			const labels = 'job="nightly",shard="1/1"';
			expect(values.get(`scrapejob_targets_total{${labels},status="ok"}`)).toBe(summary.targets.by_status.ok);
			expect(values.get(`scrapejob_targets_total{${labels},status="failed"}`)).toBe(summary.targets.by_status.failed);
			expect(summary.targets.by_status.ok).toBe(3);
			expect(values.get(`scrapejob_credits_used_total{${labels}}`)).toBe(summary.credits.used);
			expect(summary.credits.used).toBeGreaterThan(0);
			expect(values.get(`scrapejob_retries_total{${labels}}`)).toBe(summary.retries);
			expect(values.get(`scrapejob_inflight{${labels}}`)).toBe(0);
			expect(values.get(`scrapejob_concurrency_limit{${labels}}`)).toBe(summary.concurrency);
			expect(values.get(`scrapejob_changes_total{${labels},change="new"}`)).toBe(summary.changes?.new ?? 0);
			// The run failed a target: never a success, so the age alert fires.
			expect(values.get(`scrapejob_run_last_success_timestamp_seconds{${labels}}`)).toBe(0);
			// Labels are job and shard (and the metric's own): never a URL.
			expect(text).not.toContain("127.0.0.1");
			expect(readdirSync(join(dir, "textfile"))).toEqual(["scrapejob.prom"]);
		},
	);

	it("keeps the last success through a failed run (alerting on its age works), and other jobs' series in a shared file", async () => {
		const service = await useTestService({ concurrency: 4 });
		const dir = tempDir();
		const out = join(dir, "out");
		const metrics = join(dir, "scrapejob.prom");
		const good = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1"], [`metrics: scrapejob.prom`]));
		const first = await runJobFile(good, { out, env: service.env, cwd: dir });
		const key = 'scrapejob_run_last_success_timestamp_seconds{job="nightly",shard=""}';
		const succeeded = samples(readFileSync(metrics, "utf8")).get(key)!;
		expect(succeeded).toBe(Date.parse(first.finished_at) / 1000);

		const other = writeJob(
			dir,
			"other",
			jobYaml(service.site.url, ["/product/2"], ["name: other", "metrics: scrapejob.prom"]).replace(
				"name: nightly\n",
				"",
			),
		);
		await runJobFile(other, { out, env: service.env, cwd: dir });

		writeJob(dir, "nightly", jobYaml(service.site.url, ["/status/500"], ["retry: {attempts: 1}"]));
		const failed = await runJobFile(good, { out, env: service.env, cwd: dir, metrics: "scrapejob.prom" });
		expect(failed.targets.by_status.failed).toBe(1);
		const after = samples(readFileSync(metrics, "utf8"));
		expect(after.get(key)).toBe(succeeded);
		expect(after.get('scrapejob_targets_total{job="nightly",shard="",status="failed"}')).toBe(1);
		expect(after.get('scrapejob_run_last_success_timestamp_seconds{job="other",shard=""}')).toBeGreaterThan(0);
	});
});

describe("the metrics docs/guides/monitoring.md promises", () => {
	it("its table names every metric a run writes, with its type and extra label, and no other", () => {
		const rows = [
			...readDoc("docs/guides/monitoring.md").matchAll(/^\| `(scrapejob_\w+)(?:\{(\w+)\})?` \| (\w+) \|/gm),
		].map((match) => `${match[1]}${match[2] ? `{${match[2]}}` : ""} ${match[3]}`);
		expect(rows.sort()).toEqual(
			METRIC_SPECS.map((spec) => `${spec.name}${spec.label ? `{${spec.label.name}}` : ""} ${spec.type}`).sort(),
		);
	});
});

describe("the alert rule docs/guides/monitoring.md gives", () => {
	it.skipIf(!promtool)("is a rule file promtool accepts", () => {
		const rule = /```yaml\n# readme-test: fragment\n([\s\S]*?)```/.exec(readDoc("docs/guides/monitoring.md"))![1]!;
		const path = join(tempDir(), "rules.yml");
		writeFileSync(path, rule);
		const check = spawnSync("promtool", ["check", "rules", path], { encoding: "utf8" });
		expect(check.stdout + check.stderr).toContain("SUCCESS: 1 rules found");
		expect(check.status).toBe(0);
	});
});

describe("--metrics FILE shared by the shards of a job", () => {
	it("two shard processes at once: the file ends with each shard's series, told apart by `shard`", async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 4 });
		const dir = tempDir();
		const out = join(dir, "out");
		const metrics = join(dir, "scrapejob.prom");
		const paths = Array.from({ length: 12 }, (_, index) => `/product/${index + 1}`);
		const path = writeJob(dir, "nightly", jobYaml(service.site.url, paths, ["shard_by: url"]));
		const runs = await Promise.all(
			["1/2", "2/2"].map(
				(shard) =>
					spawnCli(["run", path, "--out", out, "--quiet", "--metrics", metrics, "--shard", shard], service.env).done,
			),
		);
		for (const run of runs) expect(run.code, run.stderr).toBe(0);
		const values = samples(readFileSync(metrics, "utf8"));
		const ok = ["1/2", "2/2"].map((shard) =>
			values.get(`scrapejob_targets_total{job="nightly",shard="${shard}",status="ok"}`),
		);
		// Each shard's own figures (the run read the others' series only when it opened the file, and wrote them back stale).
		expect(ok.every((count) => count !== undefined && count > 0)).toBe(true);
		expect(ok[0]! + ok[1]!).toBe(12);
		for (const shard of ["1/2", "2/2"])
			expect(
				values.get(`scrapejob_run_last_success_timestamp_seconds{job="nightly",shard="${shard}"}`),
			).toBeGreaterThan(0);
		expect(readdirSync(dir).filter((name) => name.includes("scrapejob.prom"))).toEqual(["scrapejob.prom"]);
	});
});

describe("--metrics while a run goes on", () => {
	it("rewrites the file every 10 s (fetches in flight, the duration), and a stopped run ends with /fail and nothing in flight", async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 2 });
		const receiver = await startReceiver();
		const dir = tempDir();
		const metrics = join(dir, "scrapejob.prom");
		const paths = Array.from({ length: 12 }, (_, index) => `/slow?ms=4000&n=${index}`);
		const path = writeJob(dir, "nightly", jobYaml(service.site.url, paths, ["concurrency: 2"]));
		const run = spawnCli(
			["run", path, "--out", join(dir, "out"), "--quiet", "--metrics", metrics, "--healthcheck", `${receiver.url}/hc`],
			service.env,
		);
		const labels = 'job="nightly",shard=""';
		// The writes are the events: the file is polled until a timed write shows (the first write, at the
		// start, says ~0 s; only the timer writes after it). Not "past 10 s": the timer counts from the event
		// loop's cached time, which a busy start leaves a few ms behind the clock the duration is read from.
		let during = new Map<string, number>();
		while ((during.get(`scrapejob_run_duration_seconds{${labels}}`) ?? 0) < 5) {
			await new Promise((resolve) => setTimeout(resolve, 50));
			try {
				during = samples(readFileSync(metrics, "utf8"));
			} catch {
				// not written yet
			}
		}
		// The first timed write came at 10 s, not later.
		expect(during.get(`scrapejob_run_duration_seconds{${labels}}`)).toBeGreaterThan(9.5);
		expect(during.get(`scrapejob_run_duration_seconds{${labels}}`)).toBeLessThan(11.5);
		expect(during.get(`scrapejob_inflight{${labels}}`)).toBe(2);
		expect(during.get(`scrapejob_targets_total{${labels},status="ok"}`)).toBeGreaterThanOrEqual(4);
		run.child.kill("SIGTERM");
		const ended = await run.done;
		expect(ended.code).toBe(130);
		const after = samples(readFileSync(metrics, "utf8"));
		expect(after.get(`scrapejob_inflight{${labels}}`)).toBe(0);
		expect(after.get(`scrapejob_run_last_success_timestamp_seconds{${labels}}`)).toBe(0);
		expect(receiver.requests.map((request) => request.path)).toEqual(["/hc/start", "/hc/fail"]);
	}, 30_000);
});

describe("healthcheck pings", () => {
	it("GET URL/start then URL on success; URL/start then URL/fail when the exit code is not 0; the URL never printed", async () => {
		const service = await useTestService({ concurrency: 4 });
		const receiver = await startReceiver();
		const secret = `${receiver.url}/ping/5f1c0de0-secret`;
		const dir = tempDir();
		const out = join(dir, "out");
		const ok = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1"]));
		const first = await runCli(["run", ok, "--out", out, "--healthcheck", secret], { env: service.env });
		expect(first.code).toBe(0);
		expect(receiver.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
			"GET /ping/5f1c0de0-secret/start",
			"GET /ping/5f1c0de0-secret",
		]);

		const bad = writeJob(
			dir,
			"broken",
			jobYaml(service.site.url, ["/status/404"], [`healthcheck: ${secret}`]).replace("nightly", "broken"),
		);
		const second = await runCli(["run", bad, "--out", out], { env: service.env });
		expect(second.code).toBe(1);
		expect(receiver.requests.slice(2).map((r) => r.path)).toEqual([
			"/ping/5f1c0de0-secret/start",
			"/ping/5f1c0de0-secret/fail",
		]);
		for (const text of [first.stdout, first.stderr, second.stdout, second.stderr]) expect(text).not.toContain("secret");
	});

	it("exit 3 at the account look-up sends no ping (the check's schedule reports it); at the scraper's health check, /start then /fail", async () => {
		const service = await useTestService({ concurrency: 4 });
		const receiver = await startReceiver();
		const dir = tempDir();
		const job = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1"]));
		const args = ["run", job, "--out", join(dir, "out"), "--quiet", "--healthcheck", `${receiver.url}/hc`];
		const refused = await runCli(args, { env: { ...service.env, SCRAPEJOB_ACCOUNT_KEY: "not-the-key" } });
		expect(refused.code, refused.stderr).toBe(3);
		expect(receiver.requests).toEqual([]);
		const scraperOnly = {
			SCRAPEJOB_SCRAPER_KEY: "not-the-key",
			SCRAPEJOB_SCRAPER_URL: `${service.emulator.apiUrl}/api/v1`,
		};
		const health = await runCli(args, { env: scraperOnly });
		expect(health.code, health.stderr).toBe(3);
		expect(receiver.requests.map((request) => request.path)).toEqual(["/hc/start", "/hc/fail"]);
	});

	it("a monitor that never answers holds the exit up no longer than its 10 s bound, and leaves the exit code alone", async () => {
		const service = await useTestService({ concurrency: 4 });
		// Answers the start ping; the end ping hangs (never answered).
		const receiver = await startReceiver((req, res) => {
			if (req.url?.endsWith("/start")) res.end("OK");
		});
		const dir = tempDir();
		const path = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1"]));
		const run = runCli(["run", path, "--out", join(dir, "out"), "--quiet", "--healthcheck", `${receiver.url}/hc`], {
			env: service.env,
		});
		await receiver.received(2);
		const pinged = Date.now();
		const result = await run;
		const waited = Date.now() - pinged;
		expect(result.code).toBe(0);
		expect(waited).toBeGreaterThan(9_000);
		expect(waited).toBeLessThan(11_500);
		expect(result.stderr).toContain("healthcheck success ping failed: no answer within 10 s");
		expect(result.stderr).not.toContain("/hc");
	}, 30_000);
});

describe("OTEL_EXPORTER_OTLP_ENDPOINT", () => {
	it("pushes the same figures over OTLP/HTTP when the run ends", async () => {
		const service = await useTestService({ concurrency: 4 });
		const collector = await startReceiver((_req, res) => {
			res.writeHead(200, { "content-type": "application/json" }).end("{}");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const path = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1", "/product/2", "/status/404"]));
		const result = await runCli(["run", path, "--out", out, "--quiet", "--json"], {
			env: { ...service.env, OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/otlp` },
		});
		expect(result.code).toBe(1);
		// Once per run: a second push (the SDK's periodic reader exported again on shutdown) would come
		// within moments of the first; the process's own exit bounds how long it may take.
		const exited = await spawnCli(["run", path, "--out", out, "--quiet"], {
			...service.env,
			OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/otlp`,
		}).done;
		expect(exited.code).toBe(1);
		await collector.received(2);
		await new Promise((resolve) => setImmediate(resolve));
		expect(collector.requests).toHaveLength(2);
		const request = collector.requests[0]!;
		expect(request.path).toBe("/otlp/v1/metrics");
		const figures = otlpFigures(JSON.parse(request.body));
		const summary = readSummary(onlyRun(out, "nightly"));
		expect(figures.get("scrapejob_targets_total|nightly||ok")).toBe(summary.targets.by_status.ok);
		expect(figures.get("scrapejob_targets_total|nightly||failed")).toBe(1);
		expect(figures.get("scrapejob_credits_used_total|nightly|")).toBe(summary.credits.used);
		expect(summary.credits.used).toBeGreaterThan(0);
		expect(figures.get("scrapejob_run_last_success_timestamp_seconds|nightly|")).toBe(0);
	});
});

interface OtlpValue {
	stringValue?: string;
}
interface OtlpPoint {
	asDouble?: number;
	asInt?: number | string;
	attributes?: Array<{ key: string; value: OtlpValue }>;
}
interface OtlpBody {
	resourceMetrics: Array<{
		scopeMetrics: Array<{
			metrics: Array<{ name: string; gauge?: { dataPoints: OtlpPoint[] }; sum?: { dataPoints: OtlpPoint[] } }>;
		}>;
	}>;
}

/** `name|job|shard[|label]` → value, from an OTLP/HTTP JSON body. */
function otlpFigures(body: OtlpBody): Map<string, number> {
	const out = new Map<string, number>();
	for (const resource of body.resourceMetrics) {
		for (const scope of resource.scopeMetrics) {
			for (const metric of scope.metrics) {
				for (const point of (metric.gauge ?? metric.sum)?.dataPoints ?? []) {
					const attributes = new Map(
						(point.attributes ?? []).map((attribute) => [attribute.key, attribute.value.stringValue ?? ""]),
					);
					const extra = [...attributes.keys()].filter((key) => key !== "job" && key !== "shard");
					const key = [
						metric.name,
						attributes.get("job"),
						attributes.get("shard"),
						...extra.map((k) => attributes.get(k)),
					];
					out.set(key.join("|"), Number(point.asDouble ?? point.asInt));
				}
			}
		}
	}
	return out;
}

describe("--metrics FILE is a side channel: what is at its path never ends or holds the run", () => {
	const hostile: Array<[string, (path: string) => void]> = [
		["a file where its folder should be", (path) => writeFileSync(join(path, ".."), "not a folder")],
		["a FIFO", (path) => execFileSync("mkfifo", [path])],
		["a link to /dev/zero", (path) => symlinkSync("/dev/zero", path)],
	];
	it.each(hostile)("%s: a warning once, every record written, the run's own exit code", async (name, plant) => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const path = name.startsWith("a file where") ? join(dir, "afile", "m.prom") : join(dir, "m.prom");
		plant(path);
		const job = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1", "/product/2"]));
		const result = await runCli(["run", job, "--out", out, "--metrics", path], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		expect(readSummary(onlyRun(out, "nightly"))).toMatchObject({ complete: true, targets: { done: 2 } });
		if (name.startsWith("a file where")) {
			expect(result.stderr.match(/metrics: could not write/g)).toHaveLength(1);
		} else {
			// Written by a rename over what was there: a regular file now, with the run's figures.
			expect(lstatSync(path).isFile()).toBe(true);
			expect(readFileSync(path, "utf8")).toContain('scrapejob_targets_total{job="nightly"');
		}
	});

	it("a negative counter of another job in a shared file is dropped; every later write succeeds and keeps the rest", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const metrics = join(dir, "shared.prom");
		writeFileSync(
			metrics,
			[
				'scrapejob_credits_used_total{job="other",shard=""} -5',
				'scrapejob_retries_total{job="other",shard=""} 7',
				"",
			].join("\n"),
		);
		const job = writeJob(dir, "nightly", jobYaml(service.site.url, ["/product/1"]));
		const result = await runCli(["run", job, "--out", join(dir, "out"), "--metrics", metrics], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		expect(result.stderr).not.toContain("metrics: could not write");
		const written = samples(readFileSync(metrics, "utf8"));
		expect(written.get('scrapejob_retries_total{job="other",shard=""}')).toBe(7);
		expect(written.get('scrapejob_credits_used_total{job="nightly",shard=""}')).toBeGreaterThan(0);
		expect([...written.values()].every((value) => value >= 0)).toBe(true);
	});
});
