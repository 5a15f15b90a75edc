/**
 * The oldest Node scrapejob supports, as `engines` in package.json says (a test keeps the two equal): its
 * job store's SQLite addon is built for Node-API as Node 22 has it.
 */
export const MIN_NODE_VERSION = "22.12.0";

/** A `vX.Y.Z` version as numbers, missing parts as 0. */
function versionParts(version: string): readonly [number, number, number] {
	const [major = 0, minor = 0, patch = 0] = (/^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(version) ?? [])
		.slice(1)
		.map((part) => Number(part ?? 0));
	return [major, minor, patch];
}

/**
 * Why a Node of this version cannot run scrapejob, in words a user can act on; null when it can. (Node 20
 * left long-term support in April 2026; there the store's addon crashed the process instead of failing.)
 */
export function nodeTooOld(version: string): string | null {
	const have = versionParts(version);
	const need = versionParts(MIN_NODE_VERSION);
	const index = have.findIndex((part, at) => part !== need[at]);
	if (index === -1 || (have[index] ?? 0) > (need[index] ?? 0)) return null;
	return `scrapejob needs Node ${MIN_NODE_VERSION} or later (Node 24 recommended); this is Node ${version}. Without root or a version manager: \`npm install --prefix ~/.local/node24 node@24\`, then \`export PATH=~/.local/node24/node_modules/node/bin:$PATH\` (docs/guides/deploying.md)`;
}

/** This process's Node, judged once. */
export const NODE_TOO_OLD: string | null = nodeTooOld(process.version);
