/**
 * Load a scenario file (YAML, or JSON — which YAML 1.2 reads too) and report each problem with the
 * file, line and column it comes from.
 */
import { readFile } from "node:fs/promises";
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { errorMessage, UsageError } from "../common/index.js";
import { checkScenario, formatIssuePath, type Scenario, type ScenarioIssue } from "./scenario.js";

/**
 * Read, parse and validate a scenario file; the result (defaults filled in) goes to
 * `startEmulator({ scenario })`. Throws `UsageError` naming the file, line and column of every problem.
 */
export async function loadScenarioFile(path: string): Promise<Scenario> {
	let text: string;
	try {
		text = await readFile(path, "utf8");
	} catch (error) {
		throw new UsageError(`cannot read scenario file ${path}: ${errorMessage(error)}`, { cause: error });
	}
	return parseScenarioText(text, path);
}

/** Parse and validate a scenario given as text; `source` names it in messages. */
export function parseScenarioText(text: string, source: string): Scenario {
	const lineCounter = new LineCounter();
	const doc = parseDocument(text, { lineCounter, prettyErrors: false });
	const syntaxError = doc.errors[0];
	if (syntaxError) {
		const at = lineCounter.linePos(syntaxError.pos[0]);
		throw new UsageError(`invalid scenario file ${source}:${at.line}:${at.col} ${syntaxError.message}`);
	}
	const value: unknown = doc.toJS();
	if (value !== null && value !== undefined && (typeof value !== "object" || Array.isArray(value))) {
		throw new UsageError(`invalid scenario file ${source}: the top level must be a mapping of settings`);
	}
	const checked = checkScenario(value);
	if ("issues" in checked) {
		const lines = checked.issues.map((issue) => `  ${source}:${locate(doc, lineCounter, issue)} ${describe(issue)}`);
		throw new UsageError(`invalid scenario file ${source}:\n${lines.join("\n")}`);
	}
	return checked.scenario;
}

function describe(issue: ScenarioIssue): string {
	return `${formatIssuePath(issue.path)}: ${issue.message}`;
}

/** The line:col of the deepest node of the issue's path that exists in the document. */
function locate(doc: ReturnType<typeof parseDocument>, lineCounter: LineCounter, issue: ScenarioIssue): string {
	const path = issue.path.filter((part): part is string | number => typeof part !== "symbol");
	for (let length = path.length; length >= 0; length--) {
		const node = length === 0 ? doc.contents : doc.getIn(path.slice(0, length), true);
		// An unknown key has no value node worth pointing at; point at the key itself.
		const key = length === path.length && length > 0 ? keyNode(doc, path) : null;
		if (key?.range) {
			const at = lineCounter.linePos(key.range[0]);
			return `${at.line}:${at.col}`;
		}
		if ((isMap(node) || isSeq(node) || isScalar(node)) && node.range) {
			const at = lineCounter.linePos(node.range[0]);
			return `${at.line}:${at.col}`;
		}
	}
	return "1:1";
}

function keyNode(doc: ReturnType<typeof parseDocument>, path: ReadonlyArray<string | number>) {
	const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
	if (!isMap(parent)) return null;
	const pair = parent.items.find((item) => isScalar(item.key) && item.key.value === path[path.length - 1]);
	return pair && isScalar(pair.key) ? pair.key : null;
}
