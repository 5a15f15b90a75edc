import { type Document, isAlias, isMap, isPair, isScalar, isSeq, type Node } from "yaml";
import type { DataPath } from "./positions.js";

/** `${NAME}`, the escape `$${` (a literal `${`), or a malformed `${…`. */
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{[^}]*\}?/g;

export interface EnvProblem {
	/** Where in the data the string sits. */
	path: DataPath;
	/** Character offset of the reference in the job file's text. */
	offset: number;
	message: string;
	/** What sets the variable, said after the message (and its count of uses). */
	hint?: string;
}

export interface ExpandResult {
	value: string;
	problems: Array<{ index: number; reference: string; message: string; hint?: string }>;
}

/**
 * Only `run --sandbox` sets it, so a job tried there fails `validate` (and a run without the sandbox)
 * for want of it: the problem says what sets it, and the address the emulator's own demo site takes.
 */
const DEMO_SITE_HINT =
	": `run --sandbox` sets it to its demo site; elsewhere set it to the demo site's address, e.g. SCRAPEJOB_DEMO_SITE=http://127.0.0.1:8701 (`scrapejob emulator --demo-site`)";

/**
 * Expand `${NAME}` from `env`. An unset variable is a problem naming it (an empty one is set, and
 * expands to nothing): cron runs with a thin environment, and a URL silently missing its host is
 * worse than a refusal. `$${` stays a literal `${`.
 */
export function expandString(
	value: string,
	env: Readonly<Record<string, string | undefined>>,
	onExpanded?: (name: string, value: string) => void,
): ExpandResult {
	const problems: ExpandResult["problems"] = [];
	const expanded = value.replace(REFERENCE, (match: string, name: string | undefined, index: number) => {
		if (match === "$${") return "${";
		if (name !== undefined) {
			const replacement = env[name];
			if (replacement !== undefined) {
				onExpanded?.(name, replacement);
				return replacement;
			}
			problems.push({
				index,
				reference: match,
				message: `environment variable ${name} is not set`,
				...(name === "SCRAPEJOB_DEMO_SITE" ? { hint: DEMO_SITE_HINT } : {}),
			});
			return match;
		}
		problems.push({
			index,
			reference: match,
			message: `invalid variable reference ${JSON.stringify(match)}: write \${NAME} with letters, digits and _ (or $\${ for a literal \${)`,
		});
		return match;
	});
	return { value: expanded, problems };
}

/**
 * Expand variables in every string value of the document in place (keys are left alone: they are
 * the job format's own words). The document keeps its source ranges, so problems point at the
 * reference itself, e.g. the `$` of `${SHOP_HOST}` inside a URL. `onExpanded` hears each variable used.
 */
export function expandEnvInDocument(
	doc: Document,
	text: string,
	env: Readonly<Record<string, string | undefined>>,
	onExpanded?: (name: string, value: string) => void,
): EnvProblem[] {
	const problems: EnvProblem[] = [];
	const visit = (node: unknown, path: PropertyKey[]): void => {
		if (isAlias(node)) return; // expanded where the anchor is defined
		if (isMap(node)) {
			for (const pair of node.items) {
				if (!isPair(pair)) continue;
				const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
				visit(pair.value, [...path, key]);
			}
			return;
		}
		if (isSeq(node)) {
			node.items.forEach((item, index) => {
				visit(item, [...path, index]);
			});
			return;
		}
		if (isScalar(node) && typeof node.value === "string" && node.value.includes("${")) {
			const result = expandString(node.value, env, onExpanded);
			node.value = result.value;
			const start = (node as Node).range?.[0] ?? 0;
			const end = (node as Node).range?.[1] ?? start;
			const source = text.slice(start, end);
			let cursor = 0;
			for (const problem of result.problems) {
				// Find the reference in the raw source (quotes and escapes shift it); fall back to the scalar.
				const found = source.indexOf(problem.reference, cursor);
				if (found !== -1) cursor = found + problem.reference.length;
				const offset = start + (found === -1 ? 0 : found);
				problems.push({ path, offset, message: problem.message, ...(problem.hint ? { hint: problem.hint } : {}) });
			}
		}
	};
	visit(doc.contents, []);
	return problems;
}
