export {
	CONFIG_VARIABLES,
	type ConfigFlags,
	type ConfigVariable,
	type ResolvedConfig,
	readConfigFile,
	resolveConfig,
} from "./resolve-config.js";
export { type RunSettings, resolveRunSettings } from "./run-settings.js";
