import type { DataPath } from "./positions.js";

/**
 * Whether a `${NAME}` at this place of the job's data must be set (`LoadJobOptions.variablesNeeded`). A
 * command that reads only part of a job lets the rest keep its references unexpanded: a shell that
 * exports records has no reason to hold the run's proxy password or notification secret.
 */
export type VariablesNeeded = (path: DataPath) => boolean;

const RECORD_KEYS: ReadonlySet<PropertyKey> = new Set(["name", "output", "extract", "carry"]);

/**
 * `export` and `fleet status`, which read records: the job's name (its output folder and fleet rows), its
 * output settings and its fields (`extract:` and `carry:`, wherever written: the columns).
 */
export const RECORD_VARIABLES: VariablesNeeded = (path) =>
	RECORD_KEYS.has(path[0] as PropertyKey) ||
	(path[0] === "defaults" && path[1] === "extract") ||
	((path[0] === "targets" || path[0] === "sources") && path[2] === "extract");

/**
 * `extract`: all but the pings, which only a fetching run sends. The scrape options stay needed: they are
 * part of each target's id, which matches a target's own `extract:` to its records; so does `notify`, which
 * a re-extraction sends at its end too.
 */
export const EXTRACTION_VARIABLES: VariablesNeeded = (path) => path[0] !== "healthcheck";
