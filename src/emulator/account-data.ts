/**
 * The emulated account's proxy credentials and static residential packages (docs/service.md,
 * "Account endpoints" and "Proxy lists"). Derived from the scenario's seed, so every run with the same seed shows the same account.
 * Static IPs come from 203.0.113.0/24 (TEST-NET-3, RFC 5737): documentation addresses that route nowhere.
 */
import { createRandom, deriveSeed, randomAlnum } from "./random.js";
import type { EmulatorConfig } from "./scenario.js";

export type ProxyProductCode = "rp" | "rpc" | "mp" | "dcp";

export interface ProxyPorts {
	readonly http: number;
	readonly socks5: number;
}

export interface ProxyProduct {
	readonly username: string;
	readonly password: string;
	readonly balance_mb: number;
	readonly endpoint: string;
	readonly ports: ProxyPorts;
}

export interface StaticResidentialPackage {
	readonly expiryDate: string;
	readonly ips: ReadonlyArray<{ readonly ipInfo: { readonly ip: string }; readonly password: string }>;
}

export interface AccountData {
	/** Replaced (not mutated) when a balance changes: an ordered browser profile deducts data. */
	readonly products: Record<ProxyProductCode, ProxyProduct>;
	readonly staticResidential: {
		readonly packages: readonly StaticResidentialPackage[];
		readonly endpoint: string;
		readonly ports: ProxyPorts;
	};
	/** The shared proxy identity a team key reports usage for. */
	readonly teamUsername: string;
}

/** Gateways and ports as the service documents them (docs/service.md, "Proxy lists"). */
export const GATEWAYS: Readonly<Record<ProxyProductCode | "static", { endpoint: string; ports: ProxyPorts }>> = {
	rp: { endpoint: "premium-residential.evomi.com", ports: { http: 1000, socks5: 1002 } },
	rpc: { endpoint: "core-residential.evomi.com", ports: { http: 1000, socks5: 1002 } },
	mp: { endpoint: "mp.evomi.com", ports: { http: 3000, socks5: 3002 } },
	dcp: { endpoint: "dcp.evomi.com", ports: { http: 2000, socks5: 2002 } },
	static: { endpoint: "isp-2.evomi.com", ports: { http: 12345, socks5: 12346 } },
};

/** IPs per static residential package. */
const IPS_PER_PACKAGE = 2;

export function createAccountData(config: EmulatorConfig): AccountData {
	const random = createRandom(deriveSeed(config.seed, "account"));
	const username = `emu${randomAlnum(random, 6)}`;
	const coreUsername = `emucore${randomAlnum(random, 5)}`;
	const product = (code: ProxyProductCode, user: string): ProxyProduct => ({
		username: user,
		password: randomAlnum(random, 12),
		balance_mb: config.balancesMb[code],
		endpoint: GATEWAYS[code].endpoint,
		ports: GATEWAYS[code].ports,
	});
	const products = {
		rp: product("rp", username),
		rpc: product("rpc", coreUsername),
		mp: product("mp", username),
		dcp: product("dcp", username),
	};
	const packages: StaticResidentialPackage[] = [];
	for (let first = 0; first < config.staticResidentialIps; first += IPS_PER_PACKAGE) {
		const count = Math.min(IPS_PER_PACKAGE, config.staticResidentialIps - first);
		packages.push({
			// Fixed dates keep answers reproducible; far enough ahead to count as active.
			expiryDate: new Date(Date.UTC(2030, packages.length, 1)).toISOString(),
			ips: Array.from({ length: count }, (_, offset) => ({
				ipInfo: { ip: `203.0.113.${10 + first + offset}` },
				password: randomAlnum(random, 10),
			})),
		});
	}
	return {
		products,
		staticResidential: { packages, endpoint: GATEWAYS.static.endpoint, ports: GATEWAYS.static.ports },
		teamUsername: `emuteam${randomAlnum(random, 5)}`,
	};
}
