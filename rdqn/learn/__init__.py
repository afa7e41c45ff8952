"""The learner: Q-networks (`nets`), their hyperparameters (`agent_config`), the DQN update with
IS weights inside the loss (`agent`), and the MLP's update as one compiled call (`fused_mlp`).
"""
