"""A tool module that fails to import."""

import not_a_real_module_for_tce_tests  # noqa: F401
