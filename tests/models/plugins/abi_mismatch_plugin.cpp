// A plugin built against a future ABI (plugin_test expects the version error).
extern "C" __attribute__((visibility("default"))) int omnidp_plugin_abi_version() { return 999; }
extern "C" __attribute__((visibility("default"))) void omnidp_plugin_register(void*) {}
