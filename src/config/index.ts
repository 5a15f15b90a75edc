export {
	CONFIG_VARIABLES,
	type ConfigFlags,
	type ConfigVariable,
	keyHeaderProblem,
	type ResolvedConfig,
	readConfigFile,
	resolveConfig,
} from "./resolve-config.js";
export {
	debugStacks,
	demoSiteIsSet,
	environmentKeys,
	type RunSettings,
	resolveFleetConfig,
	resolveRunSettings,
} from "./run-settings.js";
