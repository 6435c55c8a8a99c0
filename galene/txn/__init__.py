"""Transactions: the FE's transaction manager (`manager.TxnManager`), label rules, versions."""
