/** The oldest Node scrapejob runs on: its job store's SQLite addon is built for Node-API as Node 22 has it. */
export const MIN_NODE_MAJOR = 22;

/**
 * Why a Node of this version cannot run scrapejob, in words a user can act on; null when it can. (Node 20
 * left long-term support in April 2026; there the store's addon crashed the process instead of failing.)
 */
export function nodeTooOld(version: string): string | null {
	const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);
	if (major >= MIN_NODE_MAJOR) return null;
	return `scrapejob needs Node ${MIN_NODE_MAJOR} or later (Node 24 recommended); this is Node ${version}. Without root or a version manager: \`npm install --prefix ~/.local/node24 node@24\`, then \`export PATH=~/.local/node24/node_modules/node/bin:$PATH\` (docs/guides/deploying.md)`;
}

/** This process's Node, judged once. */
export const NODE_TOO_OLD: string | null = nodeTooOld(process.version);
