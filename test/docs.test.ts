/**
 * The manual (README.md and docs/) stands on its own: every relative link resolves to a file and, for
 * `#anchors`, to a heading; every `docs/….md, "Section"` a comment cites exists; the job file and
 * command line references cannot drift from the schema and the commander definitions; and nothing in
 * the repository points at a document outside it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { createProgram } from "../src/cli/index.js";
import { CONFIG_VARIABLES } from "../src/config/index.js";
import { manualFiles, ROOT, readDoc } from "./helpers/manual.js";
import { createTestContext } from "./job/helpers.js";

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchors(markdown: string): Set<string> {
	const found = new Set<string>();
	const counts = new Map<string, number>();
	for (const match of withoutFences(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
		const slug = match[1]!
			.toLowerCase()
			.replace(/`/g, "")
			.replace(/[^\p{L}\p{N}\s_-]/gu, "")
			.replace(/\s/g, "-");
		const seen = counts.get(slug) ?? 0;
		counts.set(slug, seen + 1);
		found.add(seen === 0 ? slug : `${slug}-${seen}`);
	}
	return found;
}

/** The text with fenced code blocks blanked (their lines kept, for line numbers). */
function withoutFences(markdown: string): string {
	return markdown.replace(/^```[\s\S]*?^```$/gm, (block) => block.replace(/[^\n]/g, ""));
}

function lineOf(text: string, index: number): number {
	return text.slice(0, index).split("\n").length;
}

/** Every file under a folder of the repository (node_modules and generated output left out). */
function filesUnder(folder: string): string[] {
	const out: string[] = [];
	const walk = (dir: string): void => {
		for (const entry of readdirSync(dir, { withFileTypes: true })) {
			if (entry.name === "node_modules" || entry.name === "results") continue;
			const path = join(dir, entry.name);
			if (entry.isDirectory()) walk(path);
			else out.push(relative(ROOT, path));
		}
	};
	walk(join(ROOT, folder));
	return out;
}

describe("links", () => {
	it("every guide is listed in the manual's index and in the README", () => {
		const guides = readdirSync(join(ROOT, "docs", "guides")).filter((name) => name.endsWith(".md"));
		expect(guides.length).toBeGreaterThan(0);
		const index = readDoc("docs/README.md");
		const readme = readDoc("README.md");
		expect(guides.filter((name) => !index.includes(`](guides/${name})`))).toEqual([]);
		expect(guides.filter((name) => !readme.includes(`](docs/guides/${name})`))).toEqual([]);
	});

	it("every relative link in README.md and docs/ names a file that exists, and a heading for #anchors", () => {
		const broken: string[] = [];
		for (const file of manualFiles()) {
			const text = readDoc(file);
			for (const match of withoutFences(text).matchAll(/\]\(([^)\s]+)\)/g)) {
				const link = match[1]!;
				if (/^[a-z]+:/i.test(link)) continue;
				const [path = "", anchor] = link.split("#");
				const target = path === "" ? file : normalize(join(dirname(file), path));
				const where = `${file}:${lineOf(text, match.index)} → ${link}`;
				if (target.startsWith("..") || !existsSync(join(ROOT, target))) {
					broken.push(`${where} (no such file)`);
					continue;
				}
				if (anchor === undefined) continue;
				if (!target.endsWith(".md") || statSync(join(ROOT, target)).isDirectory()) {
					broken.push(`${where} (an anchor into a file that is not Markdown)`);
				} else if (!anchors(readDoc(target)).has(anchor)) {
					broken.push(`${where} (no such heading)`);
				}
			}
		}
		expect(broken).toEqual([]);
	});

	it("every docs/… section a comment or a page cites exists", () => {
		const broken: string[] = [];
		let citations = 0;
		const files = [...filesUnder("src"), ...filesUnder("test"), ...filesUnder("bench"), ...manualFiles()];
		for (const file of files.filter((name) => /\.(ts|mjs|md)$/.test(name))) {
			// A citation may wrap over comment lines: `(docs/behaviour.md,\n * "Records")`.
			const text = readFileSync(join(ROOT, file), "utf8").replace(/\n\s*(?:\*|\/\/)\s*/g, " ");
			for (const match of text.matchAll(/\bdocs\/([\w/.-]+?\.md)(?:,\s*"([^"]+)")?/g)) {
				citations += 1;
				const page = `docs/${match[1]!}`;
				if (!existsSync(join(ROOT, page))) {
					broken.push(`${file} cites ${page}: no such page`);
					continue;
				}
				const section = match[2];
				if (section === undefined) continue;
				const headings = withoutFences(readDoc(page))
					.split("\n")
					.filter((line) => /^#{1,6} /.test(line))
					.map((line) => line.replace(/^#+ +/, ""));
				if (!headings.includes(section)) broken.push(`${file} cites ${page}, "${section}": no such heading`);
			}
		}
		expect(citations).toBeGreaterThan(0);
		expect(broken).toEqual([]);
	});

	it("every src/, test/, bench/ or scripts/ path the manual names in backticks exists", () => {
		const missing: string[] = [];
		for (const file of manualFiles()) {
			for (const match of readDoc(file).matchAll(/`((?:src|test|bench|scripts|examples)\/[\w./-]+)`/g)) {
				const path = match[1]!.replace(/\/$/, "");
				if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`);
			}
		}
		expect(missing).toEqual([]);
	});
});

describe("nothing points outside the repository", () => {
	// Built from pieces, so this file does not match itself.
	const outside = new RegExp(
		[
			["design", "\\.md"].join(""),
			["service", "-facts"].join(""),
			["spec", " [0-9]"].join(""),
			["spec", " section"].join(""),
			["style", "\\.md"].join(""),
			["shared", "/design"].join(""),
		].join("|"),
	);
	const diary = new RegExp(
		[
			// A run's sessions (summary.json's `session`) and browser sessions are the product's words, not a diary.
			"\\b(?:this|the next|another|eighth|seventh|sixth|fifth|fourth) (?:session|engineer)'s (?:runs|tests|build|reading)",
			"\\bwaves?\\b",
			"\\bengineer(?:'s|s)?\\b",
			"\\bworkplace\\b",
			"\\bthis round\\b",
		].join("|"),
		"i",
	);

	it("no file of src/, test/, bench/, examples/, jobs/, scripts/, docs/ or the README names a document that is not in it", () => {
		const offending: string[] = [];
		const folders = ["src", "test", "bench", "examples", "jobs", "scripts"];
		for (const file of [...folders.flatMap(filesUnder), ...manualFiles(), "Dockerfile", "package.json"]) {
			if (!/\.(ts|mjs|md|json|yaml)$|^Dockerfile$/.test(file)) continue;
			const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
			lines.forEach((line, index) => {
				if (outside.test(line)) offending.push(`${file}:${index + 1}: ${line.trim()}`);
			});
		}
		expect(offending).toEqual([]);
	});

	it("the manual and the code's comments keep no development diary (waves, engineers, the workplace)", () => {
		const offending: string[] = [];
		for (const file of [...filesUnder("src"), ...filesUnder("bench"), ...manualFiles()]) {
			if (!/\.(ts|md)$/.test(file)) continue;
			const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
			lines.forEach((line, index) => {
				if (diary.test(line)) offending.push(`${file}:${index + 1}: ${line.trim()}`);
			});
		}
		expect(offending).toEqual([]);
	});
});

describe("references that cannot drift", () => {
	it("the environment reference's first table is what a --config file may set", () => {
		const text = readDoc("docs/reference/environment.md");
		const table = text.slice(text.indexOf("| variable | meaning |"));
		const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
		expect(rows.map((row) => /^\| `([A-Z_]+)`/.exec(row)?.[1])).toEqual([...CONFIG_VARIABLES]);
	});

	it("the job file reference's key tables are what the schema says (scripts/job-file-reference.mjs)", async () => {
		const { generated, START, END } = (await import(join(ROOT, "scripts", "job-file-reference.mjs"))) as {
			generated: () => string;
			START: string;
			END: string;
		};
		const page = readDoc("docs/reference/job-file.md");
		const section = page.slice(page.indexOf(START), page.indexOf(END) + END.length);
		expect(section, "run `node scripts/job-file-reference.mjs --write`").toBe(generated());
		// And the schema the tables come from has every key the zod schema has, at the top level at least.
		const { jobJsonSchema } = await import("../src/job/index.js");
		const schema = jobJsonSchema() as { properties: Record<string, unknown> };
		for (const key of Object.keys(schema.properties)) expect(section).toContain(`| \`${key}\``);
	});

	it("the command line reference has every command and, under it, every flag the commander definitions declare", async () => {
		const program = await createProgram(createTestContext(ROOT).ctx);
		const page = readDoc("docs/reference/cli.md");
		const connection = page.slice(
			page.indexOf("## Connection flags"),
			page.indexOf("\n## ", page.indexOf("## Connection flags") + 1),
		);
		const missing: string[] = [];
		// A command with subcommands (`fleet status`) is documented per subcommand, under `## fleet status`.
		const commands = program.commands.flatMap((command) =>
			command.commands.length === 0
				? [{ name: command.name(), command }]
				: command.commands.map((sub) => ({ name: `${command.name()} ${sub.name()}`, command: sub })),
		);
		for (const { name, command } of commands) {
			const start = page.indexOf(`\n## ${name}\n`);
			if (start < 0) {
				missing.push(`command ${name}`);
				continue;
			}
			const next = page.indexOf("\n## ", start + 1);
			const section = page.slice(start, next < 0 ? undefined : next);
			for (const option of command.options) {
				const flag = option.long ?? option.short ?? option.flags;
				const here = section.includes(`\`${option.flags}\``) || section.includes(`\`${flag}`);
				const shared =
					section.includes("[connection flags](#connection-flags)") && connection.includes(`\`${option.flags}\``);
				if (!here && !shared) missing.push(`${name} ${option.flags}`);
			}
		}
		expect(missing).toEqual([]);
	});
});
