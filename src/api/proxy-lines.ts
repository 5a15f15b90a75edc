/** Parameters of GET /public/generate (docs/service.md, "Proxy lists"), named as the service names them. */
export interface GenerateProxiesParams {
	product: string;
	/** ISO codes; with several, the service picks one at random per line. */
	countries?: string[];
	city?: string;
	region?: string;
	isp?: string;
	session?: "sticky" | "hard";
	/** 1–100. */
	amount?: number;
	/** 1: user:pass@host:port · 2: host:port:user:pass · 3: user:pass:host:port. @default 1 */
	format?: 1 | 2 | 3;
	/** @default true */
	prepend_protocol?: boolean;
	/** @default "http" */
	protocol?: "http" | "socks5";
	/** Sticky session length, minutes, 1–1440. */
	lifetime?: number;
	adblock?: boolean;
}

export function generateQuery(params: GenerateProxiesParams): URLSearchParams {
	const query = new URLSearchParams({ product: params.product });
	if (params.countries?.length) query.set("countries", params.countries.join(","));
	if (params.city !== undefined) query.set("city", params.city);
	if (params.region !== undefined) query.set("region", params.region);
	if (params.isp !== undefined) query.set("isp", params.isp);
	if (params.session !== undefined) query.set("session", params.session);
	if (params.amount !== undefined) query.set("amount", String(params.amount));
	if (params.format !== undefined) query.set("format", String(params.format));
	if (params.prepend_protocol !== undefined) query.set("prepend_protocol", String(params.prepend_protocol));
	if (params.protocol !== undefined) query.set("protocol", params.protocol);
	if (params.lifetime !== undefined) query.set("lifetime", String(params.lifetime));
	if (params.adblock !== undefined) query.set("adblock", String(params.adblock));
	return query;
}

export interface ParsedProxy {
	/** `http` or `socks5` when the line carried a prefix, otherwise null. */
	readonly protocol: "http" | "socks5" | null;
	readonly host: string;
	readonly port: number;
	readonly username: string;
	/** The password, with the targeting suffixes (`_country-US`, `_session-…`) the service encoded into it. */
	readonly password: string;
	/** Targeting read back from the password suffixes, e.g. `{country: "US", session: "abc123"}`. */
	readonly targeting: Readonly<Record<string, string>>;
	readonly line: string;
}

function parseTargeting(password: string): Record<string, string> {
	const targeting: Record<string, string> = {};
	for (const part of password.split("_").slice(1)) {
		const dash = part.indexOf("-");
		if (dash > 0) targeting[part.slice(0, dash)] = part.slice(dash + 1);
	}
	return targeting;
}

function parsePort(text: string | undefined, line: string): number {
	const port = Number(text);
	if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`bad port in proxy line: ${line}`);
	return port;
}

/**
 * Parse one generated proxy line in the given format. Passwords never contain `:` or `@` in the
 * service's output (targeting uses `_` and `-`), so splitting on them is unambiguous.
 */
export function parseProxyLine(line: string, format: 1 | 2 | 3 = 1): ParsedProxy {
	let rest = line.trim();
	let protocol: ParsedProxy["protocol"] = null;
	const prefix = /^(https?|socks5h?):\/\//i.exec(rest);
	if (prefix) {
		protocol = prefix[1]!.toLowerCase().startsWith("socks5") ? "socks5" : "http";
		rest = rest.slice(prefix[0].length);
	}
	let host: string | undefined;
	let port: string | undefined;
	let username: string | undefined;
	let password: string | undefined;
	if (format === 1) {
		const at = rest.lastIndexOf("@");
		[username, password] = splitOnce(rest.slice(0, at), ":");
		[host, port] = splitOnce(rest.slice(at + 1), ":");
		if (at < 0) host = undefined;
	} else {
		const parts = rest.split(":");
		if (parts.length === 4) {
			if (format === 2) [host, port, username, password] = parts;
			else [username, password, host, port] = parts;
		}
	}
	if (!host || !username || password === undefined) throw new Error(`not a format ${format} proxy line: ${line}`);
	return {
		protocol,
		host,
		port: parsePort(port, line),
		username,
		password,
		targeting: parseTargeting(password),
		line,
	};
}

function splitOnce(text: string, separator: string): [string | undefined, string | undefined] {
	const index = text.indexOf(separator);
	if (index < 0) return [undefined, undefined];
	return [text.slice(0, index), text.slice(index + 1)];
}

export function parseProxyLines(
	lines: readonly string[],
	params: Pick<GenerateProxiesParams, "format">,
): ParsedProxy[] {
	return lines.map((line) => parseProxyLine(line, params.format ?? 1));
}
