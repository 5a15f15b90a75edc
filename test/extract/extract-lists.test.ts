import { existsSync, readdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

/** A table whose middle cells are empty, and links of which some have `href=""` or none. */
const TABLE_PAGE = `<html><body>
<table>
<tr><td class="name">a</td><td class="price">1.50</td></tr>
<tr><td class="name"></td><td class="price">n/a</td></tr>
<tr><td class="name">c</td><td class="price">3</td></tr>
</table>
<nav><a href="/one">one</a><a href="">self</a><a>no href</a><a href="/three">three</a></nav>
<p>code=x1;</p><p>code=;</p><p>code=x3;</p>
<ul><li></li><li> </li></ul>
</body></html>`;

let service: TestService | undefined;
let site: Server | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
	await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
	site = undefined;
});

async function startSite(): Promise<string> {
	site = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(TABLE_PAGE);
	});
	await new Promise<void>((resolve) => site!.listen(0, "127.0.0.1", resolve));
	return `http://127.0.0.1:${(site!.address() as AddressInfo).port}`;
}

function onlyRun(jobDir: string): string {
	const runs = readdirSync(jobDir).filter((name) => existsSync(join(jobDir, name, "run.json")));
	expect(runs).toHaveLength(1);
	return join(jobDir, runs[0]!);
}

describe("extract `all: true` keeps every match in document order", () => {
	it('empty matches stay as "" (css text, css attr, regex), so parallel lists align; a list of empties is not filled', async () => {
		service = await startTestService();
		const origin = await startSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"lists",
			`name: lists
defaults:
  mode: request
targets:
  - ${origin}/table
extract:
  names: {css: td.name, all: true}
  prices: {css: td.price, all: true, type: number}
  hrefs: {css: nav a, attr: href, all: true}
  links: {css: "nav a[href]", attr: href, all: true, type: url}
  codes: {regex: "code=(\\\\w*);", all: true}
  blanks: {css: li, all: true}
output:
  content: none
`,
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const runDir = onlyRun(join(out, "lists"));
		const [record] = readRecords(runDir);
		expect(record!.data).toEqual({
			names: ["a", "", "c"],
			prices: [1.5, "", 3],
			hrefs: ["/one", "", "", "/three"],
			links: [`${origin}/one`, "", `${origin}/three`],
			codes: ["x1", "", "x3"],
			blanks: ["", ""],
		});
		const [row] = readCsv(runDir);
		expect(row!.names).toBe("a |  | c");
		expect(readSummary(runDir).extract?.fields.blanks?.filled).toBe(0);
		expect(readSummary(runDir).extract?.fields.names?.filled).toBe(1);
	});

	it("a capture group that took no part in a match found nothing: not the whole match in its place", async () => {
		service = await startTestService();
		const origin = await startSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"groups",
			`name: groups
defaults:
  mode: request
targets:
  - ${origin}/table
extract:
  codes: {regex: "code=(x\\\\d)?;", all: true}
  first_y: {regex: "code=(y\\\\d)?;"}
  whole: {regex: "code=x\\\\d;", all: true}
output:
  content: none
`,
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		const [record] = readRecords(onlyRun(join(out, "groups")));
		expect(record!.data).toEqual({ codes: ["x1", "", "x3"], first_y: null, whole: ["code=x1;", "code=x3;"] });
	});
});
