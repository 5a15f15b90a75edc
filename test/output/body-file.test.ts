import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createPageStore, OutputError } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";

/**
 * The page store's body sink (`openBody`): what `api/transport` streams a large page into. The file
 * work is the output layer's: a hidden `.partial-*` file, renamed into place by `adopt`, removed on abort.
 */
describe("page store: a body streamed in", () => {
	it("is written to a hidden file as it arrives; end() names it and adopt() renames it into place", () => {
		const runDir = tempDir();
		const pages = createPageStore(runDir);
		const sink = pages.openBody();
		sink.write(Buffer.from("<html>"));
		const [partial] = readdirSync(join(runDir, "pages"));
		expect(partial).toMatch(/^\.partial-/);
		// On disk before the body ends: nothing of it waits in memory.
		expect(readFileSync(join(runDir, "pages", partial!), "utf8")).toBe("<html>");
		sink.write(Buffer.from("</html>"));
		const stored = sink.end();
		expect(stored).toBe(join(runDir, "pages", partial!));
		expect(pages.adopt("a", stored, "html")).toBe("pages/a.html");
		expect(readdirSync(join(runDir, "pages"))).toEqual(["a.html"]);
		expect(readFileSync(join(runDir, "pages", "a.html"), "utf8")).toBe("<html></html>");
	});

	it("abort() removes the file of a body that did not finish", () => {
		const runDir = tempDir();
		const sink = createPageStore(runDir).openBody();
		sink.write(Buffer.alloc(4096, "x"));
		sink.abort();
		expect(readdirSync(join(runDir, "pages"))).toEqual([]);
		// Twice is harmless: the transport may abort after a failed end.
		expect(() => sink.abort()).not.toThrow();
	});

	it("a folder it cannot write is an OutputError naming the page file", () => {
		const runDir = tempDir();
		// A file where pages/ should be.
		writeFileSync(join(runDir, "pages"), "");
		const error = (() => {
			try {
				createPageStore(runDir).openBody();
			} catch (caught) {
				return caught;
			}
			return undefined;
		})();
		expect(error).toBeInstanceOf(OutputError);
		expect((error as OutputError).path).toContain("pages");
	});

	it("removeUnfinished() removes a body a killed run left; pages stay", () => {
		const runDir = tempDir();
		const pages = createPageStore(runDir);
		pages.save("kept", Buffer.from("page"), "html");
		pages.openBody().write(Buffer.from("half a page"));
		pages.removeUnfinished();
		expect(readdirSync(join(runDir, "pages"))).toEqual(["kept.html"]);
	});
});
