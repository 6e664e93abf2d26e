B
grad_scaleJÛ˜0®5Ø?œHƒv\ÀéQÄnÞ"ô¿