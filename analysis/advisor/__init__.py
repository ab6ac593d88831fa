"""GPA's advisor: static facts, blame (backward slicing), optimizers, estimators, the
ranked advice, the fixes that apply it and their verification."""
