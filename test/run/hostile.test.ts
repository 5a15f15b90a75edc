// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { toServiceError } from "../../src/api/error-body.js";
import { isRunFolderName, onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { listenForTest } from "../helpers/loopback.js";
import { canMountPrivately, inPrivateMount } from "../helpers/private-mount.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, BIN, runPrintedCommand } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/** A scraper that answers every realtime call with `answer` (and health checks with 200): a hostile service. */
async function hostileScraper(
	answer: (res: import("node:http").ServerResponse) => void,
): Promise<{ env: NodeJS.ProcessEnv; requests: () => number }> {
	let requests = 0;
	const server = createServer((req, res) => {
		if (req.url?.includes("/scraper/health")) {
			res.writeHead(200, {
				"content-type": "application/json",
				"x-ratelimit-limit": "4",
				"x-ratelimit-remaining": "4",
			});
			res.end('{"success":true}');
			return;
		}
		requests += 1;
		answer(res);
	});
	const origin = await listenForTest(server);
	const base = `${origin}/api/v1`;
	return {
		env: { SCRAPEJOB_SCRAPER_KEY: "hostile-test-key-0123456789", SCRAPEJOB_SCRAPER_URL: base },
		requests: () => requests,
	};
}

function targetsYaml(name: string, urls: string[], extra = ""): string {
	return [
		`name: ${name}`,
		"defaults:",
		"  mode: request",
		"retry:",
		"  attempts: 2",
		"  backoff_ms: 5",
		extra,
		"targets:",
		...urls.map((url) => `  - ${url}`),
		"",
	].join("\n");
}

describe("hostile input: job files", () => {
	it("a FIFO as the job file or as a source is refused at once, not read forever", async () => {
		const dir = tempDir();
		execFileSync("mkfifo", [join(dir, "job.yaml")]);
		const asJob = await runCli(["validate", join(dir, "job.yaml")]);
		expect(asJob.code).toBe(2);
		expect(asJob.stderr).toMatch(/is not a regular file \(a pipe, socket or device\)/);
		execFileSync("mkfifo", [join(dir, "urls.txt")]);
		const job = writeJob(dir, "src", "sources:\n  - urls.txt\n");
		const asSource = await runCli(["validate", job]);
		expect(asSource.code).toBe(2);
		expect(asSource.stderr).toMatch(/urls\.txt.*is not a regular file/);
	});

	it("pathological nesting and alias expansion are refused in seconds with exit 2", async () => {
		const dir = tempDir();
		writeFileSync(join(dir, "deep.yaml"), "[".repeat(2_000_000));
		const list = Array.from({ length: 20_000 }, (_, index) => `  - x${index}`).join("\n");
		const aliases = Array.from({ length: 98 }, (_, index) => `a${index}: *big`).join("\n");
		writeFileSync(join(dir, "bomb.yaml"), `big_holder: &big\n${list}\n${aliases}\n`);
		const started = Date.now();
		const deep = await runCli(["validate", join(dir, "deep.yaml")]);
		expect(deep.code).toBe(2);
		expect(deep.stderr).toMatch(/deep\.yaml:1:65 the job file nests deeper than 64 levels/);
		const bomb = await runCli(["validate", join(dir, "bomb.yaml")]);
		expect(bomb.code).toBe(2);
		expect(bomb.stderr).toMatch(/expands to \d+ values \(aliases included\); the limit is 500000/);
		expect(Date.now() - started).toBeLessThan(10_000);
	});

	it("ids that would collide or not be portable are refused: Windows device names, derived-id look-alikes", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"ids",
			[
				"name: NUL",
				"targets:",
				"  - url: https://example.com/a",
				"    id: CON",
				"  - url: https://example.com/b",
				"    id: lpt1.html",
				"  - url: https://example.com/c",
				"    id: 0123456789abcdef",
				"",
			].join("\n"),
		);
		const result = await runCli(["validate", job]);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/ids\.yaml:1:7 name: must be a safe folder name.*not a Windows device name/);
		expect(result.stderr).toMatch(/ids\.yaml:4:9 targets\[0\]\.id: must be 1–128/);
		expect(result.stderr).toMatch(/ids\.yaml:6:9 targets\[1\]\.id:/);
		expect(result.stderr).toMatch(/ids\.yaml:8:9 targets\[2\]\.id: .*not 16 hex digits/);
		// A file named after a device gets a usable default job name.
		const con = writeJob(dir, "con", "targets: [https://example.com/]\n");
		expect((await runCli(["validate", con, "--json"])).stdout).toMatch(/"name": ?"con-job"/);
	});

	it("a key or any variable's value expanded into a URL never shows in a validation error or warning: the file's ${NAME} does", async () => {
		const dir = tempDir();
		const key = "account-key-SECRET-0123456789abcdef";
		const token = "api-token-0123456789";
		const job = writeJob(
			dir,
			"leak",
			[
				"targets:",
				'  - "ftp://example.com/?k=${SCRAPEJOB_ACCOUNT_KEY}"',
				'  - "https://example.com/search?token=${API_TOKEN}&q=1"',
				'  - "https://example.com/search?token=${API_TOKEN}&q=1"',
				'  - "ftp://example.com/search?token=${API_TOKEN}"',
				"",
			].join("\n"),
		);
		const result = await runCli(["validate", job], { env: { SCRAPEJOB_ACCOUNT_KEY: key, API_TOKEN: token } });
		expect(result.code).toBe(2);
		for (const secret of [key, token]) expect(result.stderr).not.toContain(secret);
		expect(result.stderr).toContain('got "ftp://example.com/?k=${SCRAPEJOB_ACCOUNT_KEY}"');
		expect(result.stderr).toContain('got "ftp://example.com/search?token=${API_TOKEN}"');
		expect(result.stderr).toContain("warning: duplicate target https://example.com/search?token=${API_TOKEN}&q=1");
	});
});

describe("hostile input: the service and the target URLs", () => {
	it("URL credentials and keys in target URLs never reach records, CSV or --dry-run; the fetch keeps them", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const site = new URL(service.site.url);
		const withCredentials = `http://user:pa55word@${site.host}/product/1`;
		const withKey = `${service.site.url}/product/2?k=${service.emulator.accountKey}`;
		const job = writeJob(dir, "creds", targetsYaml("creds", [withCredentials, withKey]));
		const dry = await runCli(["run", job, "--dry-run"], { env: service.env });
		expect(dry.stdout).not.toContain("pa55word");
		expect(dry.stdout).toContain(`http://***@${site.host}/product/1`);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "creds");
		for (const file of ["results.jsonl", "results.csv", "run.log"]) {
			const text = readFileSync(join(runDir, file), "utf8");
			expect(text, file).not.toContain("pa55word");
			expect(text, file).not.toContain(service.emulator.accountKey);
		}
		// The service was asked for the real URLs.
		const asked = service.emulator.ledger.byEndpoint("realtime").map((entry) => String(entry.params?.url));
		expect(asked).toContain(withCredentials);
	});

	it("an error body is redacted before it is cut to 200 characters (no key prefix leaks)", () => {
		const key = `${"k".repeat(20)}SECRETKEY0123456789`;
		const body = Buffer.from(`${"x".repeat(190)}${key} and more`);
		const error = toServiceError(502, body, "POST /scraper/realtime", [key]);
		expect(error.detail).not.toContain("kkkkkkkkkk");
		expect(error.detail).toContain("[redacted]");
	});

	it("a redirect from the service itself is an unexpected answer, not the target's 302", async () => {
		const hostile = await hostileScraper((res) => {
			res.writeHead(302, { location: "https://elsewhere.example/" });
			res.end();
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "redir", targetsYaml("redir", ["https://example.com/a"]));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code).toBe(1);
		expect(readRecords(onlyRunDir(out, "redir"))[0]).toMatchObject({ status: "failed", error: "unexpected_response" });
	});

	it("a run whose every target failed on the service's side (404s to a healthy check) is never promoted to latest", async () => {
		const hostile = await hostileScraper((res) => {
			res.writeHead(404, { "content-type": "application/json" });
			res.end('{"success":false,"error":"Not found","message":"No such endpoint"}');
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const contract = "extract:\n  title:\n    css: h1\n    min_length: 1\nextract_checks:\n  max_rows_drop: 0.5\n";
		const job = writeJob(
			dir,
			"gone",
			targetsYaml("gone", ["https://example.com/a", "https://example.com/b"], contract),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code).toBe(1);
		expect(result.stdout).not.toContain("passed: promoted to latest");
		expect(result.stdout).toMatch(
			/BROKEN, not promoted to latest.*every target failed on the service's side \(http_404 2\)/,
		);
		const summary = readSummary(onlyRunDir(out, "gone")) as {
			contract: { passed: boolean; broken: { rule: string }[] };
		};
		expect(summary.contract.passed).toBe(false);
		expect(summary.contract.broken.map((rule) => rule.rule)).toEqual(["service_failed"]);
	});

	it("a run without a contract whose every target failed on the service's side is no baseline for a later contract", async () => {
		const healthy = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html" });
			res.end("<html><body><h1>Title</h1></body></html>");
		});
		const broken = await hostileScraper((res) => {
			res.writeHead(404, { "content-type": "application/json" });
			res.end('{"success":false,"error":"Not found","message":"No such endpoint"}');
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const four = ["a", "b", "c", "d"].map((page) => `https://example.com/${page}`);
		const job = writeJob(dir, "rows", targetsYaml("rows", four, "extract:\n  title: {css: h1}\n"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: healthy.env })).code).toBe(0);
		// A night the scraper answered 404 to everything: no contract yet, so the run is complete and not held.
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: broken.env })).code).toBe(1);
		// The contract arrives with a run of half the rows: 4 → 2 breaks a 30 % drop; [4, 0] → mean 2 would not.
		const contract = "extract:\n  title: {css: h1}\nextract_checks:\n  max_rows_drop: 0.3\n";
		writeJob(dir, "rows", targetsYaml("rows", four.slice(0, 2), contract));
		const result = await runCli(["run", job, "--out", out, "--quiet", "--json"], { env: healthy.env });
		const summary = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
			contract: { passed: boolean; broken: { rule: string }[]; baseline_runs: string[] };
		};
		expect(summary.contract.baseline_runs).toHaveLength(1);
		expect(summary.contract.broken.map((rule) => rule.rule)).toEqual(["max_rows_drop"]);
		expect(result.code).toBe(1);
	});

	it("a body over max_body_mb fails its target with body_too_large after reading no more, booked at the worst case", async () => {
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html" });
			const chunk = Buffer.alloc(64 * 1024, "a");
			let sent = 0;
			const pump = () => {
				while (sent < 400 && res.write(chunk)) sent += 1;
				if (sent >= 400) res.end();
				else res.once("drain", pump);
			};
			pump();
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"big",
			targetsYaml("big", ["https://example.com/a"], "max_body_mb: 1\noutput:\n  content: inline"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code).toBe(1);
		const [record] = readRecords(onlyRunDir(out, "big"));
		expect(record).toMatchObject({ status: "failed", error: "body_too_large", credits_used: 2 });
		expect(record!.content).toBeUndefined();
	});

	it("unreported, negative or garbled credits count as the worst case: --max-credits 10 buys at most 5 request fetches", async () => {
		let answer = 0;
		const hostile = await hostileScraper((res) => {
			const credits = ["-1000000", "abc", undefined][answer++ % 3];
			res.writeHead(200, {
				"content-type": "text/html",
				...(credits !== undefined ? { "x-credits-used": credits } : {}),
			});
			res.end("<html><body>ok</body></html>");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 20 }, (_, index) => `https://example.com/p${index}`);
		const job = writeJob(dir, "bypass", targetsYaml("bypass", urls, "concurrency: 1"));
		const result = await runCli(["run", job, "--out", out, "--quiet", "--max-credits", "10"], { env: hostile.env });
		expect(result.code).toBe(1);
		expect(hostile.requests()).toBe(5);
		const summary = readSummary(onlyRunDir(out, "bypass"));
		expect(summary).toMatchObject({ stopped_reason: "budget_exhausted", credits: { used: 10 } });
	});
});

describe("hostile input: pages a crawl reads", () => {
	it("a link longer than 8 KiB is left out, not followed and paid for", async () => {
		const long = `/p?q=${"x".repeat(9000)}`;
		const site = await startTargetSite((req, res) => {
			if (req.url === "/robots.txt") res.writeHead(404).end();
			else if (req.url === "/start") html(res, `<a href="/short">a</a><a href="${long}">b</a>`);
			else html(res, "<p>leaf</p>");
		});
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"longlinks",
			`name: longlinks\ndefaults: {mode: request}\ncrawl: {max_depth: 1}\ntargets:\n  - ${site.origin}/start\n`,
		);
		const result = await runCli(["run", job, "--out", join(dir, "out"), "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		expect(site.requests.map((request) => request.path).sort()).toEqual(["/robots.txt", "/short", "/start"]);
		expect(
			readRecords(onlyRunDir(join(dir, "out"), "longlinks"))
				.map((record) => new URL(record.url).pathname)
				.sort(),
		).toEqual(["/short", "/start"]);
	});
});

describe("hostile input: credits charged on attempts that fail", () => {
	/** Each kind of charged failure the service can send, and what one attempt of it costs. */
	const charged: Record<
		string,
		{ credits: number; answer: (res: import("node:http").ServerResponse) => void; remaining?: number }
	> = {
		"a body cut after its headers": {
			credits: 2,
			// The balance and mode its headers said reach the failed record.
			remaining: 777,
			answer: (res) => {
				res.writeHead(200, {
					"content-type": "text/html",
					"content-length": "5000",
					"x-credits-used": "2",
					"x-credits-remaining": "777",
					"x-mode-used": "request",
				});
				res.write("<html>");
				setTimeout(() => res.destroy(), 5);
			},
		},
		"a charged scraping error (500 with credits_used)": {
			credits: 1,
			answer: (res) => {
				res.writeHead(500, { "content-type": "application/json" });
				res.end('{"success":false,"error":"Scraping failed","message":"Page crashed","credits_used":1}');
			},
		},
		"a 200 with an error body and X-Credits-Used": {
			credits: 1,
			answer: (res) => {
				res.writeHead(200, { "content-type": "application/json", "x-credits-used": "1" });
				res.end('{"success":false,"error":"Bad answer","message":"upstream odd"}');
			},
		},
	};
	for (const [name, { credits, answer, remaining }] of Object.entries(charged)) {
		it(`${name}: every attempt's charge is on the record, in the summary and in the budget; not an outage`, async () => {
			let sent = 0;
			const hostile = await hostileScraper((res) => {
				sent += 1;
				answer(res);
			});
			const dir = tempDir();
			const out = join(dir, "out");
			const urls = ["https://example.com/a", "https://example.com/b", "https://example.com/c"];
			const job = writeJob(dir, "paid", targetsYaml("paid", urls, "concurrency: 1"));
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
			expect(result.code, result.stderr).toBe(1);
			const records = readRecords(onlyRunDir(out, "paid"));
			expect(records).toHaveLength(3);
			const recorded = records.reduce((sum, record) => sum + Number(record.credits_used), 0);
			// Every answer the service sent was charged: the records hold them all.
			expect(recorded).toBe(sent * credits);
			for (const record of records) expect(record.credits_used).toBe(Number(record.attempts) * credits);
			if (remaining !== undefined) {
				for (const record of records)
					expect(record).toMatchObject({ credits_remaining: remaining, mode_used: "request" });
			}
			expect(readSummary(onlyRunDir(out, "paid"))).toMatchObject({ credits: { used: sent * credits } });
			expect(result.stdout).not.toMatch(/outage/);
		});
	}

	it("an answer that says no cost after charged failures is booked at its worst case plus those charges", async () => {
		let sent = 0;
		const hostile = await hostileScraper((res) => {
			sent += 1;
			if (sent % 2 === 1) {
				res.writeHead(500, { "content-type": "application/json" });
				res.end('{"success":false,"error":"Scraping failed","message":"Page crashed","credits_used":1}');
			} else res.writeHead(200, { "content-type": "text/html" }).end("<html><body>ok</body></html>");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "unsaid", targetsYaml("unsaid", ["https://example.com/a"], "concurrency: 1"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code, result.stderr).toBe(0);
		const [record] = readRecords(onlyRunDir(out, "unsaid"));
		// The charged 500 (1) and the unsaid answer at request mode's worst case (2).
		expect(record).toMatchObject({ status: "ok", attempts: 2, credits_used: 3 });
		expect(readSummary(onlyRunDir(out, "unsaid"))).toMatchObject({ credits: { used: 3 } });
	});

	it("20 charged failures of one kind in a row stop the run (paid_failures, exit 1): no more credits go to it", async () => {
		let sent = 0;
		const hostile = await hostileScraper((res) => {
			sent += 1;
			res.writeHead(500, { "content-type": "application/json" });
			res.end('{"success":false,"error":"Scraping failed","message":"Page crashed","credits_used":1}');
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 30 }, (_, index) => `https://example.com/p${index}`);
		const job = writeJob(dir, "burn", targetsYaml("burn", urls, "concurrency: 1\nbreaker: false"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code, result.stderr).toBe(1);
		expect(result.stderr).toContain("20 fetches in a row were charged and failed with page_crashed");
		const runDir = onlyRunDir(out, "burn");
		// Twenty charged fetches, retries included: ten targets of two attempts each (retry.attempts: 2), every
		// one charged and on its record; the last 20 targets never sent.
		expect(readRecords(runDir)).toHaveLength(10);
		expect(sent).toBe(20);
		expect(readSummary(runDir)).toMatchObject({ stopped_reason: "paid_failures", credits: { used: 20 } });
	});

	it("an implausible X-Credits-Used (1e308) is booked at the worst case, never as Infinity or null", async () => {
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1e308" });
			res.end("<html><body>ok</body></html>");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "huge", targetsYaml("huge", ["https://example.com/a", "https://example.com/b"]));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code, result.stderr).toBe(0);
		// request mode's worst case is 2 credits a fetch.
		expect(readSummary(onlyRunDir(out, "huge"))).toMatchObject({ credits: { used: 4 } });
	});
});

describe("hostile input: the disk", () => {
	it("a write error mid-run stops sending at once (exit 5), leaves only whole lines, and --resume finishes", async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		// Pages of about 8 KB kept inline: results.jsonl grows ~9 KB a record.
		const urls = Array.from({ length: 120 }, (_, index) => `${service.site.url}/large/${index + 1}?kb=8`);
		const job = writeJob(dir, "disk", targetsYaml("disk", urls, "output:\n  content: inline"));
		// The kernel refuses writes past 512 KiB a file for this process (EFBIG): a disk filling up mid-run
		// (after the job store's first pages, before the records' end).
		const child = spawn(
			"sh",
			["-c", `trap "" XFSZ; ulimit -f 1024; exec "${process.execPath}" "${BIN}" run "${job}" --out "${out}" --quiet`],
			{
				env: { PATH: process.env.PATH, ...service.env },
				stdio: ["ignore", "pipe", "pipe"],
			},
		);
		let stderr = "";
		child.stderr.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
		expect(code).toBe(5);
		// Whichever file reaches the limit first (the records, or the job store growing a page at a time).
		expect(stderr).toMatch(
			/output failed: cannot write .*(results\.(jsonl|csv)|history\.sqlite).*nothing more was sent/,
		);
		const runDir = onlyRunDir(out, "disk");
		const lines = readFileSync(join(runDir, "results.jsonl"), "utf8").split("\n");
		expect(lines.at(-1)).toBe("");
		for (const line of lines.slice(0, -1)) expect(() => JSON.parse(line)).not.toThrow();
		const written = lines.length - 1;
		expect(written).toBeLessThan(120);
		// No new fetch after the failure: at most the ones in flight then.
		expect(service.emulator.ledger.byEndpoint("realtime").length).toBeLessThanOrEqual(written + 2 + 2);

		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(resumed.code).toBe(0);
		const records = readRecords(runDir);
		expect(new Set(records.map((record) => record.id)).size).toBe(120);
		expect(records).toHaveLength(120);
	}, 60_000);

	it("a read-only output folder gets a message that says so, exit 5", async () => {
		const service = await useTestService();
		const dir = tempDir();
		mkdirSync(join(dir, "out"));
		writeFileSync(join(dir, "out", "ro"), "a file where the job folder should be");
		const job = writeJob(dir, "ro", targetsYaml("ro", [`${service.site.url}/page/1`]));
		const result = await runCli(["run", job, "--out", join(dir, "out")], { env: service.env });
		expect(existsSync(join(dir, "out", "ro"))).toBe(true);
		expect(result.code).toBe(5);
		expect(result.stderr).toMatch(/output failed: cannot write .*a file is in the way where a folder should be/);
		expect(result.stderr).not.toMatch(/ENOENT/);
	});
});

describe("hostile input: a read-only file system", () => {
	it.skipIf(!canMountPrivately())(
		"--out on it says read-only (EROFS), exit 5 (Node's recursive mkdir said ENOENT: no such file or directory)",
		async () => {
			assertBuilt();
			const service = await useTestService();
			const dir = tempDir();
			const mounted = join(dir, "ro");
			mkdirSync(mounted);
			const job = writeJob(dir, "rofs", targetsYaml("rofs", [`${service.site.url}/page/1`]));
			const { code, stderr } = await inPrivateMount(
				'mount -t tmpfs -o ro tmpfs "$1" && exec "$2" "$3" run "$4" --out "$1/out"',
				[mounted, process.execPath, BIN, job],
				service.env,
			);
			expect(stderr).toMatch(/output failed: cannot write .*the file system is read-only \(EROFS\)/);
			expect(stderr).not.toMatch(/ENOENT|no such file/);
			expect(code).toBe(5);
			expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
		},
	);
});

describe("hostile input: a full disk before --resume", () => {
	it.skipIf(!canMountPrivately())(
		"the job's lock cannot be written: exit 5 naming it and ENOSPC, no empty lock left behind, nothing sent",
		async () => {
			assertBuilt();
			const service = await useTestService();
			const dir = tempDir();
			const mounted = join(dir, "disk");
			mkdirSync(mounted);
			const urls = [1, 2, 3, 4].map((index) => `${service.site.url}/page/${index}`);
			// The budget stops the first run after two fetches: a run to resume.
			const job = writeJob(dir, "full", targetsYaml("full", urls, "max_credits: 4"));
			const { code, stderr } = await inPrivateMount(
				[
					'mount -t tmpfs -o size=1m tmpfs "$1" || exit 99',
					'"$2" "$3" run "$4" --out "$1/out" --quiet > /dev/null 2>&1',
					// Fill the disk to the last block.
					'head -c 2000000 /dev/zero > "$1/filler" 2> /dev/null',
					'"$2" "$3" run "$4" --out "$1/out" --resume',
					"code=$?",
					'ls -A "$1/out/full" >&2',
					"exit $code",
				].join("\n"),
				[mounted, process.execPath, BIN, job],
				service.env,
			);
			expect(stderr).toMatch(/output failed: cannot write .*full\/\.lock: no space left on the device \(ENOSPC\)/);
			expect(code, stderr).toBe(5);
			// The folder listing: the run and the store, no lock file of a process that never held it.
			expect(stderr).not.toMatch(/^\.lock$/m);
			expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(2);
		},
	);
});

describe("hostile input: a damaged results.jsonl before --resume", () => {
	it("is refused naming the lines that are not records; --repair moves them aside and their targets run again", async () => {
		const service = await useTestService({ concurrency: 1 });
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 6 }, (_, index) => `${service.site.url}/page/${index + 1}`);
		const job = writeJob(dir, "dmg", targetsYaml("dmg", urls, "max_credits: 8"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		const runDir = onlyRunDir(out, "dmg");
		const path = join(runDir, "results.jsonl");
		const lines = readFileSync(path, "utf8").trim().split("\n");
		expect(lines).toHaveLength(4);
		const second = JSON.parse(lines[1]!);
		lines[1] = "this is not a record";
		lines[2] = JSON.stringify({ ...JSON.parse(lines[2]!), credits_used: "2" });
		writeFileSync(path, `${lines.join("\n")}\n`);
		const sentBefore = service.emulator.ledger.byEndpoint("realtime").length;

		const refused = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "100"], {
			env: service.env,
		});
		expect(refused.code).toBe(2);
		expect(refused.stderr).toMatch(/has 2 lines that are not a valid record \(line 2, 3\); nothing was sent/);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sentBefore);

		const repaired = await runCli(
			["run", job, "--out", out, "--quiet", "--resume", "--repair", "--max-credits", "100"],
			{ env: service.env },
		);
		expect(repaired.code).toBe(0);
		const records = readRecords(runDir);
		expect(records).toHaveLength(6);
		expect(new Set(records.map((record) => record.id)).size).toBe(6);
		expect(records.map((record) => record.id)).toContain(second.id);
		expect(readFileSync(join(runDir, "results.corrupt.jsonl"), "utf8").trim().split("\n")).toHaveLength(2);
		expect(readSummary(runDir).complete).toBe(true);
	});
});

describe("hostile input: a complete run whose results.jsonl was damaged since", () => {
	it("--resume refuses it (not 'already complete') naming file, lines and the repair command, which works as printed", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const urls = Array.from({ length: 5 }, (_, index) => `${service.site.url}/page/${index + 1}`);
		writeJob(dir, "done", targetsYaml("done", urls, "extract:\n  title: h1\noutput:\n  content: files"));
		expect((await runCli(["run", "done.yaml", "--out", "out", "--quiet"], { env: service.env, cwd: dir })).code).toBe(
			0,
		);
		const runDir = onlyRunDir(join(dir, "out"), "done");
		const path = join(runDir, "results.jsonl");
		const lines = readFileSync(path, "utf8").trim().split("\n");
		const damaged = [JSON.parse(lines[1]!).id, JSON.parse(lines[3]!).id];
		lines[1] = JSON.stringify({ ...JSON.parse(lines[1]!), credits_used: "2" });
		lines.splice(2, 0, "garbage that is not json");
		lines[4] = JSON.stringify({ ...JSON.parse(lines[4]!), status: "finished" });
		writeFileSync(path, `${lines.join("\n")}\n`);
		const sentBefore = service.emulator.ledger.byEndpoint("realtime").length;

		const refused = await runCli(["run", "done.yaml", "--out", "out", "--resume"], { env: service.env, cwd: dir });
		expect(refused.code).toBe(2);
		expect(refused.stdout).not.toContain("already complete");
		expect(refused.stderr).toContain(
			`${path} has 3 lines that are not a valid record (line 2, 3, 5); nothing was sent`,
		);
		const printed = /run `([^`]+)`/.exec(refused.stderr)?.[1];
		expect(printed).toBe(`npx scrapejob run done.yaml --out out --resume ${basename(runDir)} --repair`);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sentBefore);
		// Re-extraction from it is refused alike, before its run folder, naming the same repair.
		const extract = await runCli(["extract", "done.yaml", "--out", "out", "--run", basename(runDir)], {
			env: service.env,
			cwd: dir,
		});
		expect(extract.code).toBe(2);
		expect(extract.stderr).toContain(`run \`${printed}\``);
		expect(readdirSync(join(dir, "out", "done")).filter(isRunFolderName)).toEqual([basename(runDir)]);

		const repaired = await runPrintedCommand(printed!, service.env, dir).done;
		expect(repaired.code, repaired.stderr).toBe(0);
		const records = readRecords(runDir);
		expect(records.map((record) => record.id).sort()).toEqual([...new Set(records.map((record) => record.id))].sort());
		expect(records).toHaveLength(5);
		// Only the damaged records' targets were fetched again (the garbage line had none).
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sentBefore + damaged.length);
		const again = await runCli(["run", "done.yaml", "--out", "out", "--resume"], { env: service.env, cwd: dir });
		expect(again.code).toBe(0);
		expect(again.stdout).toContain("already complete");
	});
});

describe("hostile input: FIFOs, devices and huge files inside run folders", () => {
	it("extract reads a stored page only when it is a regular file within max_body_mb: that page fails, the others are read", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = [1, 2, 3, 4].map((index) => `${service.site.url}/page/${index}`);
		const job = writeJob(
			dir,
			"pages",
			targetsYaml("pages", urls, "max_body_mb: 1\nextract:\n  title: h1\noutput:\n  content: files"),
		);
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(0);
		const runDir = onlyRunDir(out, "pages");
		const pages = readRecords(runDir).map((record) => join(runDir, String(record.content_path)));
		rmSync(pages[0]!);
		execFileSync("mkfifo", [pages[0]!]);
		rmSync(pages[1]!);
		symlinkSync("/dev/zero", pages[1]!);
		writeFileSync(pages[2]!, Buffer.alloc(2 * 1024 * 1024, 0x61));
		const started = Date.now();
		const extract = await runCli(["extract", job, "--out", out, "--run", basename(runDir), "--json"]);
		expect(Date.now() - started).toBeLessThan(20_000);
		const summary = JSON.parse(extract.stdout) as { complete: boolean; targets: { by_status: Record<string, number> } };
		expect(summary.complete).toBe(true);
		expect(summary.targets.by_status).toMatchObject({ ok: 1, failed: 3 });
		const latest = readdirSync(join(out, "pages")).filter(isRunFolderName).sort().pop()!;
		const failed = readRecords(join(out, "pages", latest)).filter((record) => record.status === "failed");
		expect(failed.map((record) => record.message).join("\n")).toMatch(/a pipe[\s\S]*a device[\s\S]*over the/);
	});

	it("merge refuses a results.jsonl that is a FIFO at once, naming it", async () => {
		const dir = tempDir();
		const shard = join(dir, "out", "job", "20260101T000000Z-aaaaaa-shard-1-of-1");
		mkdirSync(shard, { recursive: true });
		writeFileSync(
			join(shard, "run.json"),
			JSON.stringify({ job: "job", run_id: basename(shard), shard: { index: 1, count: 1 } }),
		);
		execFileSync("mkfifo", [join(shard, "results.jsonl")]);
		const started = Date.now();
		const merged = await runCli(["merge", shard, "--out", join(dir, "merged")]);
		expect(Date.now() - started).toBeLessThan(10_000);
		expect(merged.code).not.toBe(0);
		expect(merged.stderr).toContain("is not a regular file (a pipe)");
	});
});

describe("hostile input: a trickling answer", () => {
	it("a realtime answer trickling one byte a second is cut at the request's total deadline", async () => {
		const { createScraperClient, NetworkError } = await import("../../src/api/index.js");
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html" });
			const timer = setInterval(() => res.write("x"), 200);
			res.on("close", () => clearInterval(timer));
		});
		const client = createScraperClient({
			scraperKey: "hostile-test-key-0123456789",
			baseUrl: hostile.env.SCRAPEJOB_SCRAPER_URL!,
			realtimeTimeoutMs: 700,
		});
		const started = Date.now();
		const error = await client.realtime({ url: "https://example.com/" }).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(NetworkError);
		expect((error as InstanceType<typeof NetworkError>).failure).toBe("timeout");
		expect(Date.now() - started).toBeLessThan(3000);
	});
});

describe("hostile input: huge pages stream to disk", () => {
	/** Files under `pages/` of every run of `job` in `out` (hidden ones included). */
	function pageFiles(out: string, job: string): Array<{ name: string; size: number }> {
		const jobDir = join(out, job);
		if (!existsSync(jobDir)) return [];
		const files: Array<{ name: string; size: number }> = [];
		for (const run of readdirSync(jobDir)) {
			const pagesDir = join(jobDir, run, "pages");
			if (!existsSync(pagesDir)) continue;
			for (const name of readdirSync(pagesDir)) files.push({ name, size: statSync(join(pagesDir, name)).size });
		}
		return files;
	}

	it("content: files writes a large page to its file as it arrives (not after), whole, with its size and hash", async () => {
		const dir = tempDir();
		const out = join(dir, "out");
		const half = Buffer.alloc(1536 * 1024, "x");
		half.write("<html><body>", 0);
		let sawPartial = false;
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1" });
			res.write(half);
			// The second half is sent only once the first is on disk: a runner that holds the body in
			// memory until the end never lets this answer finish.
			const waitForSpill = setInterval(() => {
				const partial = pageFiles(out, "big").find((file) => file.name.startsWith(".partial-"));
				if (!partial || partial.size < 1024 * 1024) return;
				clearInterval(waitForSpill);
				sawPartial = true;
				res.end(half);
			}, 10);
			// Not forever: a runner that never spills gets the rest after 5 s (and fails the assertion below).
			const giveUp = setTimeout(() => {
				clearInterval(waitForSpill);
				res.end(half);
			}, 5000);
			res.on("close", () => {
				clearInterval(waitForSpill);
				clearTimeout(giveUp);
			});
		});
		const job = writeJob(
			dir,
			"big",
			targetsYaml("big", ["https://example.com/a"], "max_body_mb: 8\noutput:\n  content: files"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code).toBe(0);
		expect(sawPartial).toBe(true);
		const runDir = onlyRunDir(out, "big");
		const [record] = readRecords(runDir);
		expect(record).toMatchObject({ status: "ok", bytes: half.length * 2, content_path: `pages/${record!.id}.html` });
		const page = Buffer.concat([half, half]);
		expect(readFileSync(join(runDir, record!.content_path!)).equals(page)).toBe(true);
		// Hashed as it streamed: the same content hash change tracking computes from a page in memory.
		expect(record!.content_hash).toBe(createHash("sha1").update(page).digest("hex").slice(0, 16));
		expect(pageFiles(out, "big").map((file) => file.name)).toEqual([`${record!.id}.html`]);
	});

	it("content: files, a page past max_body_mb while it streams to its file: body_too_large, and no partial file left", async () => {
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1" });
			res.on("error", () => {});
			res.end(Buffer.alloc(3 * 1024 * 1024, "t"));
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"cut",
			targetsYaml("cut", ["https://example.com/a"], "max_body_mb: 2\noutput:\n  content: files"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env });
		expect(result.code).toBe(1);
		expect(readRecords(onlyRunDir(out, "cut"))[0]).toMatchObject({ status: "failed", error: "body_too_large" });
		// Past 1 MiB the body was on its way to a `.partial-*` file: the page store removed it.
		expect(pageFiles(out, "cut")).toEqual([]);
	});

	it("a page file that cannot be written stops the run like any output failure (exit 5), leaving no partial file", async () => {
		assertBuilt();
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1" });
			res.end(Buffer.alloc(3 * 1024 * 1024, "y"));
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 6 }, (_, index) => `https://example.com/p${index}`);
		const job = writeJob(dir, "full", targetsYaml("full", urls, "concurrency: 1\noutput:\n  content: files"));
		// Files past 1 MiB are refused to this process (EFBIG): the page file fills the disk, not results.jsonl.
		const child = spawn(
			"sh",
			["-c", `trap "" XFSZ; ulimit -f 2048; exec "${process.execPath}" "${BIN}" run "${job}" --out "${out}" --quiet`],
			{ env: { PATH: process.env.PATH, ...hostile.env }, stdio: ["ignore", "pipe", "pipe"] },
		);
		let stderr = "";
		child.stderr.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
		expect(code).toBe(5);
		expect(stderr).toMatch(/output failed: cannot write .*pages.*nothing more was sent/);
		expect(hostile.requests()).toBe(1);
		expect(readRecords(onlyRunDir(out, "full"))).toHaveLength(0);
		expect(pageFiles(out, "full")).toEqual([]);
	});

	it("an output failure ends the fetches in flight at once: exit 5 within seconds, not after the grace period", async () => {
		assertBuilt();
		let requests = 0;
		const hostile = await hostileScraper((res) => {
			requests += 1;
			const headers = { "content-type": "text/html", "x-credits-used": "1", "x-ratelimit-limit": "4" };
			// Two small pages (the learned concurrency grows to 3), then one that fills the disk; the
			// others are slow pages that would answer much later.
			if (requests <= 2) res.writeHead(200, headers).end("<p>small</p>");
			else if (requests === 3) res.writeHead(200, headers).end(Buffer.alloc(3 * 1024 * 1024, "y"));
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 6 }, (_, index) => `https://example.com/p${index}`);
		const job = writeJob(dir, "full", targetsYaml("full", urls, "concurrency: 3\noutput:\n  content: files"));
		const started = Date.now();
		const child = spawn(
			"sh",
			["-c", `trap "" XFSZ; ulimit -f 2048; exec "${process.execPath}" "${BIN}" run "${job}" --out "${out}" --quiet`],
			{ env: { PATH: process.env.PATH, ...hostile.env }, stdio: ["ignore", "pipe", "pipe"] },
		);
		const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
		expect(code).toBe(5);
		// The grace period is 30 s: ending in-flight fetches at once is what makes this fast.
		expect(Date.now() - started).toBeLessThan(15_000);
		expect(readSummary(onlyRunDir(out, "full")).abandoned).toBeGreaterThanOrEqual(1);
	}, 40_000);

	it("a key echoed back in X-Mode-Used and in a task id never reaches a file of the run folder", async () => {
		const key = "hostile-test-key-0123456789";
		let requests = 0;
		const hostile = await hostileScraper((res) => {
			requests += 1;
			const headers = { "x-credits-used": "1", "x-mode-used": `request (key ${key})` };
			if (requests === 1) {
				// A task hand-off whose id carries the key, polled at the address the service gives.
				res.writeHead(202, { "content-type": "application/json", ...headers });
				res.end(JSON.stringify({ task_id: `task-${key}`, status: "processing" }));
				return;
			}
			res.writeHead(200, { "content-type": "text/html", ...headers }).end("<p>page</p>");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = ["https://example.com/a", "https://example.com/b"];
		const job = writeJob(dir, "echo", targetsYaml("echo", urls, "concurrency: 1"));
		const result = await runCli(["run", job, "--out", out, "--quiet", "--task-poll-ms", "20"], { env: hostile.env });
		expect(result.stdout + result.stderr).not.toContain(key);
		const runDir = onlyRunDir(out, "echo");
		const records = readRecords(runDir);
		expect(records.map((record) => record.mode_used)).toEqual(
			expect.arrayContaining([expect.stringContaining("request")]),
		);
		expect(records.some((record) => record.task_id !== null)).toBe(true);
		for (const name of readdirSync(runDir, { recursive: true }) as string[]) {
			const path = join(runDir, name);
			if (!name.includes(".")) continue;
			expect(readFileSync(path, "utf8"), name).not.toContain(key);
		}
	});

	it("the account key echoed in a service error message never reaches a record's message (or any file)", async () => {
		const accountKey = "account-key-ECHOED-0123456789abcdef";
		const hostile = await hostileScraper((res) => {
			res.writeHead(500, { "content-type": "application/json", "x-credits-used": "1" });
			res.end(JSON.stringify({ success: false, error: "Scraping failed", message: `bad key ${accountKey} here` }));
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "echoed", targetsYaml("echoed", ["https://example.com/a"], "concurrency: 1"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], {
			env: { ...hostile.env, SCRAPEJOB_ACCOUNT_KEY: accountKey },
		});
		expect(result.code, result.stderr).toBe(1);
		expect(result.stdout + result.stderr).not.toContain(accountKey);
		const runDir = onlyRunDir(out, "echoed");
		const [record] = readRecords(runDir);
		// The rest of the service's words are kept: only the key is taken out.
		expect(record!.message).toContain("bad key");
		expect(record!.message).not.toContain(accountKey);
		for (const name of readdirSync(runDir, { recursive: true }) as string[]) {
			if (name.includes(".")) expect(readFileSync(join(runDir, name), "utf8"), name).not.toContain(accountKey);
		}
	});

	it("a page a killed run left unfinished is removed when the run resumes; finished pages stay", async () => {
		const service = await useTestService({ concurrency: 1 });
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 4 }, (_, index) => `${service.site.url}/page/${index + 1}`);
		const job = writeJob(dir, "left", targetsYaml("left", urls, "max_credits: 4\noutput:\n  content: files"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		const runDir = onlyRunDir(out, "left");
		const pagesDir = join(runDir, "pages");
		const kept = readdirSync(pagesDir);
		expect(kept).toHaveLength(2);
		// What a process killed mid-page leaves: a body streamed in, a save not yet renamed.
		writeFileSync(join(pagesDir, ".partial-0b7c"), "half a page");
		writeFileSync(join(pagesDir, ".tmp-4242-0"), "half a page");
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "100"], {
			env: service.env,
		});
		expect(resumed.code).toBe(0);
		const after = readdirSync(pagesDir).sort();
		expect(after).toHaveLength(4);
		expect(after.filter((name) => name.startsWith("."))).toEqual([]);
		for (const name of kept) expect(after).toContain(name);
	});

	it("content: none counts and hashes a large page without keeping it", async () => {
		const page = Buffer.alloc(3 * 1024 * 1024 + 17, "z");
		const hostile = await hostileScraper((res) => {
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1" });
			res.end(page);
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "none", targetsYaml("none", ["https://example.com/a"], "output:\n  content: none"));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: hostile.env })).code).toBe(0);
		const [record] = readRecords(onlyRunDir(out, "none"));
		expect(record).toMatchObject({ status: "ok", bytes: page.length, content_path: null });
		expect(record!.content_hash).toBe(createHash("sha1").update(page).digest("hex").slice(0, 16));
		expect(pageFiles(out, "none")).toEqual([]);
	});
});
