import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

const src = join(import.meta.dirname, "..", "src");

/**
 * The architecture reads from the tree (docs/architecture.md, "Import rules"): data flows
 * config → job → api → run → output, `cli` on top and `emulator` beside. Each folder may use
 * only the folders listed here, and only through their `index.ts`.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
	common: [],
	config: ["common"],
	extract: ["common"],
	job: ["common", "extract"],
	api: ["common"],
	output: ["common"],
	report: ["common", "output"],
	history: ["common", "output"],
	browser: ["common"],
	/** Link following: seeds and discovered pages are the job's targets; the frontier is an output file. */
	crawl: ["common", "extract", "job", "output"],
	/** Many workers on one run, coordinated through PostgreSQL: a second implementation of the run's coordination parts. */
	fleet: ["common", "job", "output"],
	run: ["common", "job", "api", "output", "report", "browser", "history", "extract", "crawl", "fleet"],
	emulator: ["common"],
	/** The one-call library entry (`runJobFile`): what the CLI's `run` assembles, for code. */
	library: ["common", "config", "job", "api", "output", "run", "emulator", "history", "browser", "fleet"],
	/** The CLI parses flags, prints and maps exit codes; running a job is the library's (one product). */
	cli: ["common", "config", "job", "api", "output", "run", "report", "browser", "history", "emulator", "library"],
};

async function sourceFiles(dir: string): Promise<string[]> {
	const entries = await readdir(dir, { withFileTypes: true });
	const nested = await Promise.all(
		entries.map((entry) =>
			entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]),
		),
	);
	return nested.flat().filter((file) => file.endsWith(".ts"));
}

/** One module as the compiler reads it: its path below `src/` and its syntax tree. */
interface ParsedFile {
	relative: string;
	folder: string;
	tree: ts.SourceFile;
}

let parsed: Promise<ParsedFile[]> | undefined;

/** Every file of `src/` parsed once for all the tests below. */
function parseSources(): Promise<ParsedFile[]> {
	parsed ??= sourceFiles(src).then((files) =>
		Promise.all(
			files.map(async (file) => {
				const relative = file.slice(src.length + 1);
				const tree = ts.createSourceFile(file, await readFile(file, "utf8"), ts.ScriptTarget.Latest, true);
				return { relative, folder: relative.includes("/") ? relative.split("/")[0]! : relative, tree };
			}),
		),
	);
	return parsed;
}

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
	visit(node);
	ts.forEachChild(node, (child) => walk(child, visit));
}

function lineOf(tree: ts.SourceFile, node: ts.Node): number {
	return tree.getLineAndCharacterOfPosition(node.getStart(tree)).line + 1;
}

/** A module specifier the compiler can read without running the code. */
function literalText(node: ts.Node | undefined): string | undefined {
	return node !== undefined && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))
		? node.text
		: undefined;
}

interface ModuleUse {
	/** What the file names: a relative path, a package, or undefined for a computed `import()`. */
	specifier: string | undefined;
	line: number;
}

/**
 * Every module a file uses: `import … from`, side-effect `import "./x.js"`, `export … from`,
 * `import x = require(…)`, `import()` calls and `import("…")` types.
 */
function moduleUses(tree: ts.SourceFile): ModuleUse[] {
	const uses: ModuleUse[] = [];
	walk(tree, (node) => {
		if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
			uses.push({ specifier: literalText(node.moduleSpecifier), line: lineOf(tree, node) });
		} else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
			uses.push({ specifier: literalText(node.moduleReference.expression), line: lineOf(tree, node) });
		} else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
			uses.push({ specifier: literalText(node.arguments[0]), line: lineOf(tree, node) });
		} else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
			uses.push({ specifier: literalText(node.argument.literal), line: lineOf(tree, node) });
		}
	});
	return uses;
}

/** The import graph of `src/`: each file's relative imports, as paths below `src/` (`run/index.js`). */
function importGraph(files: readonly ParsedFile[]): Map<string, { target: string; line: number }[]> {
	const graph = new Map<string, { target: string; line: number }[]>();
	for (const { relative, tree } of files) {
		const targets: { target: string; line: number }[] = [];
		for (const { specifier, line } of moduleUses(tree)) {
			if (specifier === undefined || !specifier.startsWith(".")) continue;
			targets.push({ target: join(relative, "..", specifier), line });
		}
		graph.set(relative, targets);
	}
	return graph;
}

it("imports flow one way, and across folders only through index.ts (read by the TypeScript compiler)", async () => {
	const files = await parseSources();
	const offending: string[] = [];
	for (const [relative, targets] of importGraph(files)) {
		// The package entry point re-exports the public surface of every folder.
		if (relative === "index.ts") continue;
		const folder = relative.split("/")[0]!;
		for (const { target, line } of targets) {
			const targetFolder = target.split("/")[0]!;
			if (targetFolder === folder) continue;
			const at = `${relative}:${line} → ${target}`;
			if (!(ALLOWED[folder] ?? []).includes(targetFolder)) offending.push(`${at} (not allowed)`);
			else if (target !== `${targetFolder}/index.js`) offending.push(`${at} (not via index.ts)`);
		}
	}
	expect(offending).toEqual([]);
});

/**
 * The runner's rooms follow a target's path (docs/architecture.md): a room may use only the rooms
 * listed here, so the tree reads top-down and no two rooms lean on each other.
 */
const RUN_ROOMS: Readonly<Record<string, readonly string[]>> = {
	locks: [],
	economics: [],
	flow: ["locks"],
	records: ["flow"],
	target: ["records", "flow", "locks", "economics"],
	feed: ["target", "records", "flow"],
	fleet: ["target", "economics", "flow", "records", "locks"],
	merge: ["feed", "target", "records", "locks"],
	core: ["feed", "target", "records", "flow", "locks", "economics", "fleet"],
	reextract: ["core", "target", "records", "flow", "locks"],
};

/** Imports between the runner's rooms that `RUN_ROOMS` does not allow (a room's own files are free). */
function roomViolations(graph: Map<string, { target: string; line: number }[]>): string[] {
	const offending: string[] = [];
	for (const [relative, targets] of graph) {
		const [folder, room, file] = relative.split("/");
		if (folder !== "run" || file === undefined) continue;
		for (const { target, line } of targets) {
			const [targetFolder, targetRoom, targetFile] = target.split("/");
			if (targetFolder !== "run" || targetFile === undefined || targetRoom === room) continue;
			if (!(RUN_ROOMS[room!] ?? []).includes(targetRoom!)) offending.push(`${relative}:${line} → ${target}`);
		}
	}
	return offending;
}

it("the runner's rooms import one way (core → feed → target → records → flow → locks), read by the compiler", async () => {
	const graph = importGraph(await parseSources());
	const rooms = new Set(
		[...graph.keys()]
			.filter((file) => file.split("/").length === 3 && file.startsWith("run/"))
			.map((file) => file.split("/")[1]),
	);
	// Every room has its rule: a new room is placed in the order, not let through.
	expect([...rooms].sort()).toEqual(Object.keys(RUN_ROOMS).sort());
	expect(roomViolations(graph)).toEqual([]);
	// A planted edge against the order is caught.
	const planted = new Map(graph);
	planted.set("run/locks/run-lock.ts", [{ target: "run/target/journal.js", line: 1 }]);
	expect(roomViolations(planted)).toEqual(["run/locks/run-lock.ts:1 → run/target/journal.js"]);
});

it("below the CLI every import() names its module: a computed one hides an edge from the rules above", async () => {
	const offending: string[] = [];
	for (const { relative, folder, tree } of await parseSources()) {
		if (folder === "cli") continue;
		for (const { specifier, line } of moduleUses(tree)) {
			if (specifier === undefined) offending.push(`${relative}:${line}: a computed import()`);
		}
	}
	expect(offending).toEqual([]);
});

it("the library (src/library/, src/index.ts) never reaches src/cli/, directly or through another module", async () => {
	const graph = importGraph(await parseSources());
	const seen = new Set<string>();
	const reached: string[] = [];
	const pending = [...graph.keys()].filter((file) => file === "index.ts" || file.startsWith("library/"));
	while (pending.length > 0) {
		const file = pending.pop()!;
		if (seen.has(file)) continue;
		seen.add(file);
		for (const { target, line } of graph.get(file.replace(/\.js$/, ".ts")) ?? []) {
			if (target.startsWith("cli/")) reached.push(`${file}:${line} → ${target}`);
			else pending.push(target.replace(/\.js$/, ".ts"));
		}
	}
	expect(reached).toEqual([]);
	// The walk did follow the graph: the entry point reaches the run core.
	expect(seen).toContain("run/index.ts");
});

/** What belongs to the CLI's process: its output streams, its exit and its signal and event hooks. */
const PROCESS_MEMBERS: ReadonlySet<string> = new Set([
	"stdout",
	"stderr",
	"stdin",
	"exit",
	"exitCode",
	"abort",
	"on",
	"once",
	"addListener",
	"prependListener",
	"prependOnceListener",
	"removeAllListeners",
]);

/**
 * Uses of `process`'s output, exit and hooks, and of `console`, in a file's syntax tree (comments and
 * strings are not code, so they never count): `process.stdout.write`, `process.exitCode = 1`,
 * `process["exit"]`, `console.debug`, and `process` or `console` handed on or taken apart whole
 * (`const { stdout } = process`), which would hide the member from this check.
 */
function processAndConsoleUses(tree: ts.SourceFile): string[] {
	const uses: string[] = [];
	walk(tree, (node) => {
		if (!ts.isIdentifier(node) || (node.text !== "process" && node.text !== "console")) return;
		const parent = node.parent;
		// A name that only looks like one: a property (`x.console`), a key, a declaration of its own.
		if (ts.isPropertyAccessExpression(parent) && parent.name === node) return;
		if ((ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name === node) return;
		if (ts.isPropertySignature(parent) || ts.isMethodDeclaration(parent) || ts.isQualifiedName(parent)) return;
		if (ts.isTypeReferenceNode(parent) || ts.isImportSpecifier(parent) || ts.isBindingElement(parent)) return;
		const at = `:${lineOf(tree, node)}`;
		let member: string | undefined;
		if (ts.isPropertyAccessExpression(parent) && parent.expression === node) member = parent.name.text;
		else if (ts.isElementAccessExpression(parent) && parent.expression === node) {
			member = literalText(parent.argumentExpression) ?? "[computed]";
		}
		if (node.text === "console") uses.push(`${at}: console${member === undefined ? "" : `.${member}`}`);
		else if (member === undefined) uses.push(`${at}: process as a whole`);
		else if (member === "[computed]" || PROCESS_MEMBERS.has(member)) uses.push(`${at}: process.${member}`);
	});
	return uses;
}

/**
 * Allowed uses below the CLI, each with its reason: `file: use` as `processAndConsoleUses` names it,
 * without the line. None yet: the emulator is checked too (its server reports through the caller's
 * callbacks; the CLI's `emulator` command prints).
 */
const PROCESS_ALLOWED: Readonly<Record<string, string>> = {};

it("nothing below the CLI prints, exits or hooks the process (read from the syntax tree)", async () => {
	const offences: string[] = [];
	for (const { relative, folder, tree } of await parseSources()) {
		if (folder === "cli") continue;
		for (const use of processAndConsoleUses(tree)) {
			const key = `${relative}${use.replace(/^:\d+/, "")}`;
			if (!(key in PROCESS_ALLOWED)) offences.push(`${relative}${use}`);
		}
	}
	expect(offences).toEqual([]);
});

it("the syntax-tree check sees through what a text match missed", () => {
	const uses = processAndConsoleUses(
		ts.createSourceFile(
			"planted.ts",
			[
				"process.stdout.write('x');",
				"process.exitCode = 1;",
				"console.debug('x');",
				"process['exit'](2);",
				"const { stderr } = process;",
				"// process.exit(1) in a comment is no use",
				"const text = 'console.log(1)';",
				"const env = process.env.HOME;",
			].join("\n"),
			ts.ScriptTarget.Latest,
			true,
		),
	);
	expect(uses).toEqual([
		":1: process.stdout",
		":2: process.exitCode",
		":3: console.debug",
		":4: process.exit",
		":5: process as a whole",
	]);
});

it("the runner assembles named parts: run-job.ts keeps no mutable state of its own (one stop controller)", async () => {
	// Its stop reason, flags and counters live in the stop controller, the budget, the statistics and
	// the other parts it wires together; a `let` here is state that one of them should own.
	const text = await readFile(join(src, "run", "core", "run-job.ts"), "utf8");
	const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
	expect(code.match(/^\s*let\s+\w+.*$/gm) ?? []).toEqual([]);
});

it("the HTTP layer knows nothing of files: src/api/ imports no node:fs (bodies go to the caller's sink)", async () => {
	const offending: string[] = [];
	for (const file of await sourceFiles(join(src, "api"))) {
		const text = await readFile(file, "utf8");
		if (/(?:from|import\()\s*"(?:node:)?fs(?:\/promises)?"/.test(text)) offending.push(file.slice(src.length + 1));
	}
	expect(offending).toEqual([]);
});

/** A variable of the product's environment: scrapejob's own and OpenTelemetry's. */
const ENV_VARIABLE = /^(?:SCRAPEJOB|OTEL)_[A-Z0-9_]+$/;

/**
 * Reads of an environment variable by name (`env.SCRAPEJOB_X`, `env["OTEL_X"]`, `process.env.X`) in a
 * file's syntax tree; setting one in an object literal (`{ ...env, SCRAPEJOB_DEMO_SITE: url }`) is no read.
 */
function environmentReads(tree: ts.SourceFile): string[] {
	const reads: string[] = [];
	walk(tree, (node) => {
		let name: string | undefined;
		let object: ts.Expression | undefined;
		if (ts.isPropertyAccessExpression(node)) {
			name = node.name.text;
			object = node.expression;
		} else if (ts.isElementAccessExpression(node)) {
			name = literalText(node.argumentExpression);
			object = node.expression;
		}
		if (name === undefined || object === undefined) return;
		const ofProcessEnv =
			ts.isPropertyAccessExpression(object) &&
			ts.isIdentifier(object.expression) &&
			object.expression.text === "process" &&
			object.name.text === "env";
		if (ENV_VARIABLE.test(name) || ofProcessEnv) reads.push(`:${lineOf(tree, node)}: ${name}`);
	});
	return reads;
}

/** Reads allowed outside src/config/, each with its reason (`file: name`). */
const ENV_READ_ALLOWED: Readonly<Record<string, string>> = {
	// The emulator may use only src/common/; its browser endpoint's default binary, for tests and the sandbox.
	"emulator/server.ts: SCRAPEJOB_CHROMIUM": "the emulator's own default, overridden by its chromiumPath option",
};

it("environment variables are read in src/config/ only: everything else takes their values as options", async () => {
	const offences: string[] = [];
	for (const { relative, folder, tree } of await parseSources()) {
		if (folder === "config") continue;
		for (const read of environmentReads(tree)) {
			const key = `${relative}${read.replace(/^:\d+:/, ":")}`;
			if (!(key in ENV_READ_ALLOWED)) offences.push(`${relative}${read}`);
		}
	}
	expect(offences).toEqual([]);
	// The check sees what it is meant to see.
	const planted = ts.createSourceFile(
		"planted.ts",
		[
			"const a = process.env.HOME;",
			"const b = env.SCRAPEJOB_LOCK_LEASE_MS;",
			'const c = ctx.env["OTEL_EXPORTER_OTLP_ENDPOINT"];',
			"const d = { ...env, SCRAPEJOB_DEMO_SITE: url };",
			"const e = options.env ?? process.env;",
		].join("\n"),
		ts.ScriptTarget.Latest,
		true,
	);
	expect(environmentReads(planted)).toEqual([
		":1: HOME",
		":2: SCRAPEJOB_LOCK_LEASE_MS",
		":3: OTEL_EXPORTER_OTLP_ENDPOINT",
	]);
});
