import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";

const jobDir = join(import.meta.dirname, "..", "..", "src", "job");

it("src/job imports only src/common, src/extract (selectors compiled at validation), its own modules, node: and its npm packages", async () => {
	const allowed =
		/^(\.\/[a-z-]+\.js|\.\.\/common\/index\.js|\.\.\/extract\/index\.js|node:[a-z/]+|zod|yaml|csv-parse)$/;
	const offending: string[] = [];
	for (const name of await readdir(jobDir)) {
		const text = await readFile(join(jobDir, name), "utf8");
		for (const match of text.matchAll(/from "([^"]+)"/g)) {
			if (!allowed.test(match[1] ?? "")) offending.push(`${name}: ${match[1]}`);
		}
	}
	expect(offending).toEqual([]);
});
