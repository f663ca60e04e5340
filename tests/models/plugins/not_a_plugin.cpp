// A shared library without the plugin entry points (plugin_test expects that error).
extern "C" __attribute__((visibility("default"))) int some_other_function() { return 1; }
