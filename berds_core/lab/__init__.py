"""The annotation lab: the store (one SQLite file), task sets, accounts and sign-in, who may do what, labelling, agreement, exports."""
