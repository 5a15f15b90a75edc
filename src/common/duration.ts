/**
 * Durations in job files and flags (docs/reference/limits.md): a number and a
 * unit, `500ms`, `3s`, `10m`, `24h`, `7d`. A bare `0` means "none". Fractions are allowed (`1.5h`).
 */
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const DURATION_UNITS = Object.keys(UNIT_MS) as ReadonlyArray<keyof typeof UNIT_MS>;

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** Milliseconds, or null when `text` is not a duration (the caller words the error). */
export function parseDuration(text: string | number): number | null {
	if (text === 0 || text === "0") return 0;
	if (typeof text !== "string") return null;
	const match = DURATION.exec(text.trim());
	if (!match) return null;
	const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
	return Number.isFinite(ms) && ms <= Number.MAX_SAFE_INTEGER ? Math.round(ms) : null;
}

/** The rule in words, for error messages: what a duration looks like. */
export const DURATION_HINT = "a duration such as 500ms, 3s, 10m, 24h or 7d (0 for none)";

/** `90000` → `1m 30s`: for messages and the terminal. */
export function formatDuration(ms: number): string {
	if (ms < 1000) return `${Math.round(ms)}ms`;
	const parts: string[] = [];
	let rest = Math.round(ms / 1000);
	for (const [unit, size] of [
		["d", 86_400],
		["h", 3_600],
		["m", 60],
	] as const) {
		if (rest >= size) {
			parts.push(`${Math.floor(rest / size)}${unit}`);
			rest %= size;
		}
	}
	if (rest > 0 || parts.length === 0) parts.push(`${rest}s`);
	return parts.join(" ");
}
