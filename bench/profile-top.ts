/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and lists where the time went: the functions with
 * the most self time, and the same summed per file (package or source file), in % of busy time.
 */
import { readFile } from "node:fs/promises";

interface CallFrame {
	readonly functionName: string;
	readonly url: string;
	readonly lineNumber: number;
}

interface ProfileNode {
	readonly id: number;
	readonly callFrame: CallFrame;
}

interface CpuProfile {
	readonly nodes: readonly ProfileNode[];
	readonly samples: readonly number[];
	readonly timeDeltas: readonly number[];
}

/** Folder name of the bench's build, see tsconfig.bench.json. */
const BUILD_DIR = "scrapejob-bench";

/** Shorten a script URL to what names it: `undici/lib/…`, `src/run/core/run-job.js`, `node:internal/…`. */
function shortFile(url: string): string {
	if (url === "") return "(native)";
	// The bench's own build (tsconfig.bench.json) lives under node_modules/.cache: name it by its source path.
	const build = url.indexOf(`/${BUILD_DIR}/`);
	if (build >= 0) return url.slice(build + BUILD_DIR.length + 2);
	const modules = url.lastIndexOf("/node_modules/");
	if (modules >= 0) return url.slice(modules + "/node_modules/".length);
	const source = url.lastIndexOf("/src/");
	if (source >= 0) return url.slice(source + 1);
	const bench = url.lastIndexOf("/bench/");
	if (bench >= 0) return url.slice(bench + 1);
	return url.replace(/^file:\/\//, "");
}

/** A package (`undici`, `@scope/name`), a source file, or `node:` internals. */
function fileGroup(url: string, where: string): string {
	if (where.startsWith("node:")) return "node: internals";
	if (!url.includes("/node_modules/") || url.includes(`/${BUILD_DIR}/`)) return where;
	const [first = "", second = ""] = where.split("/");
	return first.startsWith("@") ? `${first}/${second}` : first;
}

function addTo(map: Map<string, number>, key: string, value: number): void {
	map.set(key, (map.get(key) ?? 0) + value);
}

/** The top `count` functions and files by self time, as text lines. */
export async function summarizeProfile(file: string, count: number): Promise<string> {
	const profile = JSON.parse(await readFile(file, "utf8")) as CpuProfile;
	const byId = new Map(profile.nodes.map((node) => [node.id, node]));
	const byFunction = new Map<string, number>();
	const byFile = new Map<string, number>();
	let busyUs = 0;
	profile.samples.forEach((id, index) => {
		const node = byId.get(id);
		const deltaUs = profile.timeDeltas[index] ?? 0;
		if (!node || node.callFrame.functionName === "(idle)") return;
		busyUs += deltaUs;
		const { functionName, url, lineNumber } = node.callFrame;
		const where = shortFile(url);
		addTo(byFunction, `${functionName || "(anonymous)"}  ${where}${url ? `:${lineNumber + 1}` : ""}`, deltaUs);
		addTo(byFile, fileGroup(url, where), deltaUs);
	});
	const top = (map: Map<string, number>) =>
		[...map.entries()]
			.sort((a, b) => b[1] - a[1])
			.slice(0, count)
			.map(
				([name, us]) =>
					`  ${((us / busyUs) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
			);
	return [
		`busy ${(busyUs / 1000).toFixed(0)} ms; self time by function:`,
		...top(byFunction),
		"self time by package or file:",
		...top(byFile),
	].join("\n");
}
