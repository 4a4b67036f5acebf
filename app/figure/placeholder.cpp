// PLACEHOLDER (removed once the figure library has sources).
