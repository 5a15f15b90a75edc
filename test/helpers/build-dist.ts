import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");
const src = join(root, "src");
const dist = join(root, "dist");

/**
 * The first source file whose built `.js` in dist/ is missing or older than it, or undefined when
 * dist/ is current. Only modification times are read: about a millisecond for the whole tree.
 */
export function staleSource(): string | undefined {
	for (const name of readdirSync(src, { recursive: true }) as string[]) {
		if (!name.endsWith(".ts") || name.endsWith(".d.ts")) continue;
		const source = statSync(join(src, name)).mtimeMs;
		let built: number;
		try {
			built = statSync(join(dist, name.replace(/\.ts$/, ".js"))).mtimeMs;
		} catch {
			return `src/${name}`;
		}
		if (built < source) return `src/${name}`;
	}
	return undefined;
}

/**
 * Vitest's global set-up: the tests of the built CLI run dist/cli/bin.js, so dist/ is rebuilt
 * (`tsc -p tsconfig.build.json`, then the CLI's bundle: what `npm run build` runs) when any source file
 * is newer than its output. A single test file run after editing src/ then tests the code as edited,
 * never the last build; when dist/ is current nothing is built.
 */
export default function setup(): void {
	const stale = staleSource();
	if (stale === undefined) return;
	const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
	try {
		execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "pipe" });
		execFileSync(process.execPath, [join(root, "scripts", "bundle-cli.mjs")], { cwd: root, stdio: "pipe" });
	} catch (error) {
		// tsc reports on stdout, esbuild on stderr.
		const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
		const output = `${stdout?.toString() ?? ""}${stderr?.toString() ?? ""}` || String(error);
		throw new Error(`dist/ is older than src/ (${stale}) and \`npm run build\` failed:\n${output}`);
	}
}
