/**
 * robots.txt rules (RFC 9309) parsed and matched in bounded time. robots-parser matched a rule in
 * time |rule| × |path| (a set of match lengths per pattern character), on the fetch loop's thread: a
 * 1.2 MB robots.txt of wildcard rules and a page of long links held the loop for minutes. Here a rule
 * is its literal pieces between `*`s, found left to right with `indexOf` (leftmost is enough for `*`
 * alone), so one rule costs about one pass over the path; and one URL's matching has a budget.
 */

/** RFC 9309 §2.5: a crawler may stop parsing past 500 KiB; what follows is not read. */
export const ROBOTS_MAX_BYTES = 500 * 1024;

/**
 * Characters scanned at most to judge one URL (about a few ms). A real robots.txt needs a tiny part of
 * it; past it the URL is judged disallowed (the polite answer), and the caller warns.
 */
export const ROBOTS_MATCH_BUDGET = 4_000_000;

interface Rule {
	readonly allow: boolean;
	/** The pattern's length as written (after percent-encoding): the longest matching rule wins. */
	readonly length: number;
	/** The literal pieces between `*`s (the first anchored at the path's start). */
	readonly pieces: readonly string[];
	/** A trailing `$`: the last piece ends the path. */
	readonly anchoredEnd: boolean;
}

export interface RobotsRules {
	/** Whether `url` (of this robots.txt's origin) may be fetched by `userAgent`; "budget" when matching ran out. */
	allows(url: string, userAgent: string): boolean | "budget";
	/** `Crawl-delay` of `userAgent`'s group (else `*`'s), in seconds. */
	crawlDelay(userAgent: string): number | undefined;
}

/** `%2a` → `%2A`: percent-encodings compare in upper case. */
function upperEncodings(path: string): string {
	return path.replace(/%[0-9a-fA-F]{2}/g, (match) => match.toUpperCase());
}

/** A rule's path as a URL's path is written: non-ASCII percent-encoded, encodings in upper case. */
function normalizeEncoding(path: string): string {
	try {
		return upperEncodings(encodeURI(path).replace(/%25/g, "%"));
	} catch {
		return path;
	}
}

/** `Googlebot/2.1` → `googlebot`. */
function agentName(userAgent: string): string {
	const lower = userAgent.toLowerCase();
	const slash = lower.indexOf("/");
	return (slash === -1 ? lower : lower.slice(0, slash)).trim();
}

function ruleOf(pattern: string, allow: boolean): Rule {
	const normalized = normalizeEncoding(pattern);
	const anchoredEnd = normalized.endsWith("$");
	const body = anchoredEnd ? normalized.slice(0, -1) : normalized;
	return { allow, length: normalized.length, pieces: body.split("*"), anchoredEnd };
}

interface Group {
	rules: Rule[];
	crawlDelay?: number;
}

/** Parse a robots.txt body (already cut to its bound): groups by user agent, as robots-parser read them. */
export function parseRobotsRules(body: string): RobotsRules {
	const groups = new Map<string, Group>();
	const groupOf = (agent: string) => {
		let group = groups.get(agent);
		if (!group) {
			group = { rules: [] };
			groups.set(agent, group);
		}
		return group;
	};
	let agents: string[] = [];
	let inAgentLines = true;
	for (const raw of body.split(/\r\n|\r|\n/)) {
		const hash = raw.indexOf("#");
		const line = hash === -1 ? raw : raw.slice(0, hash);
		const colon = line.indexOf(":");
		if (colon === -1) continue;
		const key = line.slice(0, colon).trim().toLowerCase();
		const value = line.slice(colon + 1).trim();
		switch (key) {
			case "user-agent":
				if (!inAgentLines) agents = [];
				if (value !== "") agents.push(agentName(value));
				break;
			case "allow":
			case "disallow":
				for (const agent of agents) {
					const group = groupOf(agent);
					if (value !== "") group.rules.push(ruleOf(value, key === "allow"));
				}
				break;
			case "crawl-delay": {
				const delay = Number(value);
				for (const agent of agents) if (!Number.isNaN(delay)) groupOf(agent).crawlDelay = delay;
				break;
			}
		}
		inAgentLines = key === "user-agent";
	}
	// Longest first: the first match found decides, but for an Allow of the same length (Allow wins a tie).
	for (const group of groups.values()) group.rules.sort((a, b) => b.length - a.length);
	const groupFor = (userAgent: string) => groups.get(agentName(userAgent)) ?? groups.get("*");

	return {
		allows(url, userAgent) {
			const rules = groupFor(userAgent)?.rules;
			if (!rules || rules.length === 0) return true;
			let path: string;
			try {
				const parsed = new URL(url);
				path = upperEncodings(parsed.pathname + parsed.search);
			} catch {
				return true;
			}
			const budget = { left: ROBOTS_MATCH_BUDGET };
			let found: Rule | null = null;
			for (const rule of rules) {
				if (found !== null && rule.length < found.length) break;
				const matched = matches(rule, path, budget);
				if (matched === "budget") return "budget";
				if (!matched) continue;
				if (found === null || (rule.allow && !found.allow)) found = rule;
			}
			return found === null || found.allow;
		},
		crawlDelay: (userAgent) => groupFor(userAgent)?.crawlDelay,
	};
}

/**
 * Whether `rule` matches `path` from its start. `*` matches any run of characters, so each piece is
 * taken at its leftmost place after the one before (a later place can only leave less room).
 */
function matches(rule: Rule, path: string, budget: { left: number }): boolean | "budget" {
	const { pieces, anchoredEnd } = rule;
	const first = pieces[0]!;
	budget.left -= first.length;
	if (!path.startsWith(first)) return false;
	if (pieces.length === 1) return anchoredEnd ? path.length === first.length : true;
	let at = first.length;
	const last = pieces.length - 1;
	for (let index = 1; index < last; index += 1) {
		const piece = pieces[index]!;
		if (piece === "") continue;
		const found = path.indexOf(piece, at);
		budget.left -= (found === -1 ? path.length : found + piece.length) - at;
		if (budget.left < 0) return "budget";
		if (found === -1) return false;
		at = found + piece.length;
	}
	const tail = pieces[last]!;
	if (anchoredEnd) return path.length - tail.length >= at && path.endsWith(tail);
	if (tail === "") return true;
	const found = path.indexOf(tail, at);
	budget.left -= (found === -1 ? path.length : found) - at;
	if (budget.left < 0) return "budget";
	return found !== -1;
}
