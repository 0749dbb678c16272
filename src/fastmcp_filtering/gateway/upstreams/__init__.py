"""The servers behind the gateway: how each is reached, listed, kept, bounded in time, and
backed off when it does not answer.
"""
