/* cffi knows the fixed-width types, size_t and bool itself. */
