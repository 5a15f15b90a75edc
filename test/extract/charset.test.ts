import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeHtml } from "../../src/extract/index.js";
import { onlyRunDir, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { startTargetSite } from "../helpers/target-site.js";

/**
 * Pages not in UTF-8 (docs/guides/extraction.md): their fields read as the page shows in a browser, by the
 * charset its Content-Type or its `<meta charset>` names, in a run and in a re-extraction of its stored page.
 */
describe("a page's charset", () => {
	it("decodes a Latin-1 page by its Content-Type and a windows-1251 page by its meta, in a run and a re-extraction", async () => {
		const service = await useTestService();
		const site = await startTargetSite((req, res) => {
			if (req.url === "/latin1") {
				res.writeHead(200, { "content-type": "text/html; charset=ISO-8859-1" });
				res.end(Buffer.from("<html><body><h1>Café crème</h1></body></html>", "latin1"));
				return;
			}
			// "Привет" in windows-1251, declared only in the page.
			const cyrillic = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]);
			res.writeHead(200, { "content-type": "text/html" });
			res.end(
				Buffer.concat([
					Buffer.from('<html><head><meta charset="windows-1251"></head><body><h1>'),
					cyrillic,
					Buffer.from("</h1></body></html>"),
				]),
			);
		});
		const dir = tempDir();
		const job = writeJob(
			dir,
			"charsets",
			`name: charsets\ndefaults: {mode: request}\noutput: {content: files}\nextract:\n  title: h1\ntargets:\n  - ${site.origin}/latin1\n  - ${site.origin}/cp1251\n`,
		);
		const out = join(dir, "out");
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(run.code, run.stderr).toBe(0);
		const titles = (runDir: string) =>
			readRecords(runDir)
				.map((record) => record.data?.title)
				.sort();
		expect(titles(onlyRunDir(out, "charsets"))).toEqual(["Café crème", "Привет"]);

		const extract = await runCli(["extract", job, "--run", "latest", "--out", out, "--json"], { env: service.env });
		expect(extract.code, extract.stderr).toBe(0);
		const summary = JSON.parse(extract.stdout) as { run_dir: string; changes: { changed: number } };
		// The Latin-1 page's charset was only in its answer's header, which a stored page does not keep: its
		// bytes read as UTF-8 there. The page that names its charset reads the same.
		expect(readRecords(summary.run_dir).find((record) => record.url.endsWith("/cp1251"))?.data?.title).toBe("Привет");
	});

	it("reads UTF-8 when nothing names another encoding, or the name is unknown", () => {
		expect(decodeHtml(Buffer.from("<h1>é</h1>"))).toBe("<h1>é</h1>");
		expect(decodeHtml(Buffer.from('<meta charset="no-such-encoding"><h1>é</h1>'))).toContain("<h1>é</h1>");
		expect(decodeHtml(Buffer.from("<h1>é</h1>"), "text/html; charset=utf-8")).toBe("<h1>é</h1>");
		// A header wins over the page's meta, as in a browser.
		expect(decodeHtml(Buffer.from('<meta charset="windows-1251"><h1>é</h1>'), "text/html; charset=utf-8")).toContain(
			"<h1>é</h1>",
		);
	});
});
