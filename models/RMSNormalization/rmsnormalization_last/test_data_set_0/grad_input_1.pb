B
grad_scaleJe­¿à9KÀh4Í?vö}@