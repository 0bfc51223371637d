# ---
# agents:
#   planner:
#     models: [gpt-4o-mini]
# default_agent: planner
# ---

# %% Load the data[^load]
# [^load]: [code] execution_count=1

# I read the numbers first.

# the numbers, one per line
import math

numbers = [3, 1, 2]
print("loaded", len(numbers))

## %%%[^load.1]
# [^load.1]: [python]

# stdout> loaded 3

# %% Which is larger, the sum or the product?[^q1]
# [^q1]: [markdown] history="summary"

# Compare `sum(numbers)` and `math.prod(numbers)`.
# \%% this line is text, not a heading

## %%% Answer[^q1.1]
# [^q1.1]: [planner] time="2025-05-30T00:00:00+08:00" tokens_in=120 cost=0.0003

# They are equal: both are 6.

# %% Check[^check]
# [^check]: [code]

total = sum(numbers)
assert total == math.prod(numbers)
print("checked", total)  # both are 6
