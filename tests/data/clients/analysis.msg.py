# %% Load[^load]
# [^load]: [code]

numbers = [3, 1, 2]
print("loaded", len(numbers))

# %% How many?[^q1]
# [^q1]: [markdown]

# How many numbers were loaded?
