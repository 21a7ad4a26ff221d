"""The league service (``referee serve``): bots join over the network and play continuously."""
