// The servers and bundles of Tollgate's own tests come from the testing kit.
export { bundleWorkflows, quietRuntime, startTimeSkippingServer } from '../../testing/servers';
