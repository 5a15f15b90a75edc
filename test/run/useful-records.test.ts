import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_BLOCK_SIGNATURES } from "../../src/extract/index.js";
import { formatSummary, type ResultRecord } from "../../src/output/index.js";
import { readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/**
 * Useful records (docs/behaviour.md, "Useful records"): every record says whether it was worth its
 * credits, and why not. Block pages are real interstitials' markup, kept under block-pages/.
 */
const PAGES = join(import.meta.dirname, "block-pages");
/** Each default signature's test page. */
const DEFAULT_PAGES: Record<string, string> = {
	"Checking your browser before accessing": "cloudflare-checking.html",
	"Enable JavaScript and cookies to continue": "cloudflare-challenge.html",
	"Please enable JS and disable any ad blocker": "datadome-enable-js.html",
	"captcha-delivery.com": "datadome-captcha.html",
	'id="px-captcha"': "perimeterx-captcha.html",
	"You don't have permission to access": "akamai-access-denied.html",
};

/** A site serving the test pages as /<file>, and a few made-up pages. */
async function pagesSite() {
	return startTargetSite((req, res) => {
		const path = (req.url ?? "/").slice(1);
		if (path.endsWith(".html")) {
			res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(readFileSync(join(PAGES, path)));
			return;
		}
		if (path === "out-of-stock") return html(res, "<h1>Shoe</h1><p>This item is gone: out of stock FOREVER</p>");
		if (path === "captcha-box") return html(res, '<h1>Shoe</h1><div class="captcha-box"><img src="/c.png"></div>');
		if (path === "no-price") return html(res, "<h1>Shoe</h1><p>Price on request</p>");
		if (path === "gone") return html(res, "<h1>Not found</h1>", 404);
		html(res, "<h1>Shoe</h1>");
	});
}

async function runJob(yaml: string, env: NodeJS.ProcessEnv) {
	const dir = tempDir();
	const job = writeJob(dir, "useful", `name: useful\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\n${yaml}`);
	const result = await runCli(["run", job, "--out", join(dir, "out"), "--quiet"], { env });
	const runs = join(dir, "out", "useful");
	const runDir = join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
	return { result, runDir, records: readRecords(runDir) };
}

function byPath(records: ResultRecord[]): Record<string, ResultRecord> {
	return Object.fromEntries(records.map((record) => [new URL(record.url).pathname.slice(1), record]));
}

describe("useful records", () => {
	it("each default signature's page makes its record useless with the signature as the reason; a product page is useful", async () => {
		const service = await useTestService();
		const site = await pagesSite();
		expect(Object.keys(DEFAULT_PAGES).sort()).toEqual(DEFAULT_BLOCK_SIGNATURES.map((entry) => entry.text).sort());
		const files = [...Object.values(DEFAULT_PAGES), "product.html"];
		const { result, runDir, records } = await runJob(
			`defaults: {mode: request}\noutput: {content: inline}\ntargets:\n${files.map((file) => `  - ${site.origin}/${file}\n`).join("")}`,
			service.env,
		);
		expect(result.code, result.stderr).toBe(0);
		const got = byPath(records);
		for (const [signature, file] of Object.entries(DEFAULT_PAGES)) {
			expect(got[file], file).toMatchObject({
				status: "ok",
				useful: false,
				useless_reason: `block_signature: ${signature}`,
			});
		}
		expect(got["product.html"]).toMatchObject({ status: "ok", useful: true, useless_reason: null });
		// After the record's own fields, before an inline page: `content` stays last.
		const keys = Object.keys(got["product.html"]!);
		expect(keys.slice(-3)).toEqual(["useful", "useless_reason", "content"]);
		const summary = readSummary(runDir);
		expect(summary.useful).toEqual({ records: 1, rate: Math.round((1 / 7) * 10_000) / 10_000 });
		// Seven requests at 2 credits, one useful record.
		expect(formatSummary(summary, runDir)).toMatch(/useful +1 of 7 records \(14\.3%\); 14 credits per useful record/);
		const csv = readCsv(runDir);
		expect(csv.find((row) => row.url?.endsWith("/product.html"))).toMatchObject({ useful: "true", useless_reason: "" });
		expect(csv.find((row) => row.url?.endsWith("/akamai-access-denied.html"))).toMatchObject({
			useful: "false",
			useless_reason: "block_signature: You don't have permission to access",
		});
	});

	it("custom text and CSS signatures replace the defaults; `[]` turns every signature off", async () => {
		const service = await useTestService();
		const site = await pagesSite();
		const targets = ["out-of-stock", "captcha-box", "cloudflare-checking.html", "product.html"]
			.map((path) => `  - ${site.origin}/${path}\n`)
			.join("");
		const custom = await runJob(
			`defaults: {mode: request}\nblock_signatures:\n  - out of stock forever\n  - {css: "div.captcha-box img"}\ntargets:\n${targets}`,
			service.env,
		);
		expect(custom.result.code, custom.result.stderr).toBe(0);
		const got = byPath(custom.records);
		expect(got["out-of-stock"]).toMatchObject({
			useful: false,
			useless_reason: "block_signature: out of stock forever",
		});
		expect(got["captcha-box"]).toMatchObject({
			useful: false,
			useless_reason: "block_signature: css div.captcha-box img",
		});
		// The job's own list replaces the defaults.
		expect(got["cloudflare-checking.html"]).toMatchObject({ useful: true, useless_reason: null });
		expect(got["product.html"]).toMatchObject({ useful: true });

		const none = await runJob(`defaults: {mode: request}\nblock_signatures: []\ntargets:\n${targets}`, service.env);
		expect(none.records.map((record) => record.useful)).toEqual([true, true, true, true]);
		expect(readSummary(none.runDir).useful).toEqual({ records: 4, rate: 1 });
	});

	it("an ok record whose required field is empty is useless; a failed one is useless with its error kind", async () => {
		const service = await useTestService({ deny_all: ["/denied"] });
		const site = await pagesSite();
		const { records, runDir } = await runJob(
			`defaults: {mode: request}\noutput: {content: inline}\nextract:\n  title: h1\n  price: {css: .price, required: true}\ntargets:\n${[
				"product.html",
				"no-price",
				"gone",
				"denied",
			]
				.map((path) => `  - ${site.origin}/${path}\n`)
				.join("")}`,
			service.env,
		);
		const got = byPath(records);
		expect(got["product.html"]).toMatchObject({ status: "ok", useful: true, useless_reason: null });
		expect(got["no-price"]).toMatchObject({ status: "ok", useful: false, useless_reason: "required_empty: price" });
		// The judgement sits after the record's own fields and before `data`; an inline page stays last.
		expect(Object.keys(got["no-price"]!).slice(-4)).toEqual(["useful", "useless_reason", "data", "content"]);
		expect(got.gone).toMatchObject({ status: "failed", useful: false, useless_reason: got.gone!.error });
		expect(got.denied).toMatchObject({ status: "failed", useful: false, useless_reason: "target_http_403" });
		expect(readSummary(runDir).useful).toEqual({ records: 1, rate: 0.25 });
	});

	it("the emulator's datacenter block page is charged and useless; the residential fetch of the same page is useful", async () => {
		const service = await useTestService({ block_datacenter: ["/product/"] });
		const url = `${service.site.url}/product/2`;
		const { records } = await runJob(
			`targets:\n  - {url: "${url}", id: dc, mode: request, proxy_type: datacenter}\n  - {url: "${url}", id: res, mode: request}\n`,
			service.env,
		);
		const got = Object.fromEntries(records.map((record) => [record.id, record]));
		expect(got.dc).toMatchObject({
			status: "ok",
			credits_used: 1,
			useful: false,
			useless_reason: "block_signature: You don't have permission to access",
		});
		expect(got.res).toMatchObject({ status: "ok", credits_used: 2, useful: true });
	});

	it("the emulator's JavaScript shell is paid and useless by a required field; the browser's page is useful", async () => {
		const service = await useTestService({ browser_only: ["/product/"] });
		const url = `${service.site.url}/product/2`;
		const { records } = await runJob(
			`extract:\n  price: {css: .price, required: true}\ntargets:\n${["request", "auto", "browser"]
				.map((mode) => `  - {url: "${url}", id: ${mode}, mode: ${mode}}\n`)
				.join("")}`,
			service.env,
		);
		const got = Object.fromEntries(records.map((record) => [record.id, record]));
		expect(got.request).toMatchObject({ credits_used: 2, useful: false, useless_reason: "required_empty: price" });
		expect(got.auto).toMatchObject({
			mode_used: "auto (request)",
			credits_used: 2,
			useful: false,
			useless_reason: "required_empty: price",
		});
		expect(got.browser).toMatchObject({ credits_used: 5, useful: true, useless_reason: null });
	});
});

describe("re-extraction judges the stored pages again", () => {
	it("a field made required and a block page read back from pages/ give the same rule as a fetch", async () => {
		const service = await useTestService();
		const site = await pagesSite();
		const dir = tempDir();
		const job = (fields: string) =>
			writeJob(
				dir,
				"useful",
				`name: useful\ndefaults: {mode: request}\nextract:\n  title: h1\n${fields}targets:\n${[
					"akamai-access-denied.html",
					"product.html",
					"no-price",
				]
					.map((path) => `  - ${site.origin}/${path}\n`)
					.join("")}`,
			);
		job("  price: .price\n");
		const fetched = await runCli(["run", "useful.yaml", "--out", "out", "--quiet"], { env: service.env, cwd: dir });
		expect(fetched.code, fetched.stderr).toBe(0);
		job("  price: {css: .price, required: true}\n");
		const extract = await runCli(["extract", "useful.yaml", "--run", "latest", "--out", "out"], {
			env: service.env,
			cwd: dir,
		});
		expect(extract.code, extract.stderr + extract.stdout).toBe(0);
		const runs = readdirSync(join(dir, "out", "useful"))
			.filter((name) => /^\d/.test(name))
			.sort();
		expect(runs).toHaveLength(2);
		const before = byPath(readRecords(join(dir, "out", "useful", runs[0]!)));
		expect(before["no-price"]).toMatchObject({ useful: true });
		const after = byPath(readRecords(join(dir, "out", "useful", runs[1]!)));
		expect(after["akamai-access-denied.html"]).toMatchObject({
			useful: false,
			useless_reason: "block_signature: You don't have permission to access",
		});
		expect(after["product.html"]).toMatchObject({ useful: true, useless_reason: null });
		expect(after["no-price"]).toMatchObject({ useful: false, useless_reason: "required_empty: price" });
	});
});

describe("validate: block_signatures", () => {
	it("refuses an entry that is not a text, {text} or {css}, and a CSS selector that does not compile, at file:line:col", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"job",
			[
				"targets: [https://shop.example/a]",
				"block_signatures:",
				"  - fine text",
				"  - {css: 'div[class='}",
				"  - {xpath: //div}",
				"  - 42",
				"  - ''",
				"  - {text: 5}",
				"  - {css: null}",
				"  - .inf",
				"",
			].join("\n"),
		);
		const result = await runCli(["validate", job], { env: {} });
		expect(result.code).toBe(2);
		const lines = result.stderr.split("\n").filter((line) => line.includes("block_signatures"));
		expect(lines).toEqual([
			expect.stringMatching(/job\.yaml:4:11 block_signatures\[1\]\.css: is not a CSS selector: /),
			expect.stringMatching(
				/job\.yaml:5:5 block_signatures\[2\]: must be a text to find, \{text: "…"\} or \{css: "…"\}/,
			),
			expect.stringMatching(/job\.yaml:6:5 block_signatures\[3\]: must be a text to find/),
			expect.stringMatching(/job\.yaml:7:5 block_signatures\[4\]: must not be empty/),
			// A mapping the rule allows, with a value it does not: the entry as written says what is wrong.
			expect.stringMatching(/job\.yaml:8:5 block_signatures\[5\]: must be a text to find, .* \(got \{text: 5\}\)$/),
			expect.stringMatching(
				/job\.yaml:9:5 block_signatures\[6\]: must be a text to find, .* \(got \{css: nothing\}\)$/,
			),
			expect.stringMatching(/job\.yaml:10:5 block_signatures\[7\]: must be a text to find, .* \(got Infinity\)$/),
		]);
		const fixed = writeJob(
			dir,
			"fixed",
			"targets: [https://shop.example/a]\nblock_signatures: [a, {text: b}, {css: 'div.c'}]\n",
		);
		expect((await runCli(["validate", fixed], { env: {} })).code).toBe(0);
	});
});
